// Entry points of the reference kernels: check the request once, then hand whole blocks to the
// per-format kernel. Everything a caller can get wrong (a type without kernels, a count that is
// not whole blocks) is reported as lumen::Error, since counts come from model files.
#include "tensor/quantize.h"

#include "tensor/quant_kernels.h"
#include "util/error.h"

namespace lumen::tensor {
namespace {

using DequantizeFn = void (*)(const void*, float*, int64_t);
using QuantizeFn = void (*)(const float*, void*, int64_t);

struct Kernels {
  DequantizeFn dequantize;
  QuantizeFn quantize;
};

// Both pointers are null for a type without reference kernels.
Kernels kernels_for(DType type) {
  using namespace kernels;
  switch (type) {
    case DType::F32: return {dequantize_f32, quantize_f32};
    case DType::F16: return {dequantize_f16, quantize_f16};
    case DType::BF16: return {dequantize_bf16, quantize_bf16};
    case DType::FP8_E4M3: return {dequantize_fp8_e4m3, quantize_fp8_e4m3};
    case DType::Q4_0: return {dequantize_q4_0, quantize_q4_0};
    case DType::Q4_1: return {dequantize_q4_1, quantize_q4_1};
    case DType::Q5_0: return {dequantize_q5_0, quantize_q5_0};
    case DType::Q5_1: return {dequantize_q5_1, quantize_q5_1};
    case DType::Q8_0: return {dequantize_q8_0, quantize_q8_0};
    case DType::Q8_1: return {dequantize_q8_1, quantize_q8_1};
    case DType::Q2_K: return {dequantize_q2_k, quantize_q2_k};
    case DType::Q3_K: return {dequantize_q3_k, quantize_q3_k};
    case DType::Q4_K: return {dequantize_q4_k, quantize_q4_k};
    case DType::Q5_K: return {dequantize_q5_k, quantize_q5_k};
    case DType::Q6_K: return {dequantize_q6_k, quantize_q6_k};
    case DType::Q8_K: return {dequantize_q8_k, quantize_q8_k};
    case DType::IQ4_NL: return {dequantize_iq4_nl, quantize_iq4_nl};
    case DType::IQ4_XS: return {dequantize_iq4_xs, quantize_iq4_xs};
    case DType::MXFP4: return {dequantize_mxfp4, quantize_mxfp4};
    default: return {nullptr, nullptr};
  }
}

// The kernels for `type` and the number of blocks in `n` elements, or a lumen::Error.
Kernels checked_kernels(DType type, int64_t n, int64_t& blocks, const char* operation) {
  const DTypeInfo& info = dtype_info(type);  // throws for a forged enum value
  const Kernels found = kernels_for(type);
  if (found.dequantize == nullptr) {
    fail("cannot {} tensor type {}: Lumen has no kernels for it", operation, info.name);
  }
  if (n < 0 || n % info.block_elements != 0) {
    fail("cannot {} {} elements of {}: the count must be a whole number of {}-element blocks",
         operation, n, info.name, info.block_elements);
  }
  blocks = n / info.block_elements;
  return found;
}

// ggml's reference quantizer for `type`, or null: the K-quants have their own, and the plain
// and legacy formats share quantize_row's.
QuantizeFn ggml_quantizer_for(DType type) {
  using namespace kernels;
  switch (type) {
    case DType::Q2_K: return quantize_q2_k_ggml;
    case DType::Q3_K: return quantize_q3_k_ggml;
    case DType::Q4_K: return quantize_q4_k_ggml;
    case DType::Q5_K: return quantize_q5_k_ggml;
    case DType::Q6_K: return quantize_q6_k_ggml;
    case DType::Q8_K: return nullptr;
    // IQ4_NL and IQ4_XS: Lumen's own searches (quant_iq4.cc), the one exception to ggml's
    // bytes; llama.cpp reads what they write as it reads its own.
    default: return kernels_for(type).quantize;
  }
}

using WeightedFn = void (*)(const float*, void*, int64_t, const float*);

// ggml's importance-weighted quantizer for `type`, or null where ggml ignores the weights.
WeightedFn ggml_weighted_quantizer_for(DType type) {
  using namespace kernels;
  switch (type) {
    case DType::Q2_K: return quantize_q2_k_weighted;
    case DType::Q3_K: return quantize_q3_k_weighted;
    case DType::Q4_K: return quantize_q4_k_weighted;
    case DType::Q5_K: return quantize_q5_k_weighted;
    case DType::Q6_K: return quantize_q6_k_weighted;
    case DType::Q4_0: return quantize_q4_0_weighted;
    case DType::Q4_1: return quantize_q4_1_weighted;
    case DType::Q5_0: return quantize_q5_0_weighted;
    case DType::Q5_1: return quantize_q5_1_weighted;
    case DType::IQ4_NL: return quantize_iq4_nl_weighted;
    case DType::IQ4_XS: return quantize_iq4_xs_weighted;
    default: return nullptr;
  }
}

}  // namespace

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  int64_t blocks = 0;
  const Kernels found = checked_kernels(type, n, blocks, "dequantize");
  found.dequantize(src, dst, blocks);
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  int64_t blocks = 0;
  const Kernels found = checked_kernels(type, n, blocks, "quantize");
  found.quantize(src, dst, blocks);
}

BlockDequantizer block_dequantizer(DType type) {
  int64_t blocks = 0;
  return checked_kernels(type, 0, blocks, "dequantize").dequantize;
}

bool has_ggml_quantizer(DType type) { return ggml_quantizer_for(type) != nullptr; }

void quantize_row_ggml(DType type, const float* src, void* dst, int64_t n) {
  int64_t blocks = 0;
  checked_kernels(type, n, blocks, "quantize");
  const QuantizeFn quantize = ggml_quantizer_for(type);
  if (quantize == nullptr) {
    fail("cannot quantize to {} as llama.cpp does: llama-quantize never writes it",
         dtype_name(type));
  }
  quantize(src, dst, blocks);
}

void quantize_rows_ggml(DType type, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                        const float* importance) {
  const WeightedFn weighted = importance != nullptr ? ggml_weighted_quantizer_for(type) : nullptr;
  if (weighted == nullptr) {
    quantize_row_ggml(type, src, dst, rows * n_per_row);
    return;
  }
  int64_t blocks = 0;
  checked_kernels(type, n_per_row, blocks, "quantize");
  const size_t row_bytes = static_cast<size_t>(blocks) * dtype_info(type).block_bytes;
  for (int64_t r = 0; r < rows; ++r) {
    weighted(src + r * n_per_row, static_cast<unsigned char*>(dst) + static_cast<size_t>(r) * row_bytes, n_per_row,
             importance);
  }
}

}  // namespace lumen::tensor
