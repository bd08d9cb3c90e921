// Portable kernels for every weight type: the reference the SIMD levels are tested against and
// the path for CPUs without AVX2. The arithmetic mirrors ggml's: integer dot products per block
// against 8-bit activations, scaled in f32 per block, so results track llama.cpp's closely.
#include <cstring>

#include "backend/cpu/kquant_decode.h"
#include "backend/cpu/matmul_kernels.h"
#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "backend/cpu/activation_quant.h"
#include "tensor/quantize.h"

namespace lumen::backend::cpu::detail {
namespace {

using tensor::DType;
using tensor::fp16_to_float;
using tensor::kLegacyBlock;

template <typename Block>
Block load_block(const uint8_t* row, int64_t index) {
  Block block;
  std::memcpy(&block, row + index * int64_t{sizeof(Block)}, sizeof(Block));
  return block;
}

// Unsigned code of element j of a legacy block: the nibble, plus bit 4 from qh for 5-bit kinds.
inline int nibble(const uint8_t* qs, int j) {
  return j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
}

inline int high_bit(const uint8_t* qh, int j) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return static_cast<int>((bits >> j) & 1u);
}

// ---- one row dot product per weight type ----

float dot_q4_0(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockQ4_0>(w, b);
    const auto xb = load_block<tensor::BlockQ8_0>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) sumi += (nibble(wb.qs, j) - 8) * xb.qs[j];
    sum += static_cast<float>(sumi) * (fp16_to_float(wb.d) * fp16_to_float(xb.d));
  }
  return sum;
}

float dot_q4_1(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockQ4_1>(w, b);
    const auto xb = load_block<tensor::BlockQ8_1>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) sumi += nibble(wb.qs, j) * xb.qs[j];
    sum += static_cast<float>(sumi) * (fp16_to_float(wb.d) * fp16_to_float(xb.d)) +
           fp16_to_float(wb.m) * fp16_to_float(xb.s);
  }
  return sum;
}

float dot_q5_0(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockQ5_0>(w, b);
    const auto xb = load_block<tensor::BlockQ8_0>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) {
      sumi += ((nibble(wb.qs, j) | (high_bit(wb.qh, j) << 4)) - 16) * xb.qs[j];
    }
    sum += static_cast<float>(sumi) * (fp16_to_float(wb.d) * fp16_to_float(xb.d));
  }
  return sum;
}

float dot_q5_1(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockQ5_1>(w, b);
    const auto xb = load_block<tensor::BlockQ8_1>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) {
      sumi += (nibble(wb.qs, j) | (high_bit(wb.qh, j) << 4)) * xb.qs[j];
    }
    sum += static_cast<float>(sumi) * (fp16_to_float(wb.d) * fp16_to_float(xb.d)) +
           fp16_to_float(wb.m) * fp16_to_float(xb.s);
  }
  return sum;
}

float dot_q8_0(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockQ8_0>(w, b);
    const auto xb = load_block<tensor::BlockQ8_0>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) sumi += wb.qs[j] * xb.qs[j];
    sum += static_cast<float>(sumi) * (fp16_to_float(wb.d) * fp16_to_float(xb.d));
  }
  return sum;
}

// The non-linear 4-bit formats: a code is an index into kIq4Levels.
inline int iq4_level(const uint8_t* qs, int j) { return tensor::kIq4Levels[nibble(qs, j)]; }

float dot_iq4_nl(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockIQ4_NL>(w, b);
    const auto xb = load_block<tensor::BlockQ8_0>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) sumi += iq4_level(wb.qs, j) * xb.qs[j];
    sum += static_cast<float>(sumi) * (fp16_to_float(wb.d) * fp16_to_float(xb.d));
  }
  return sum;
}

// MXFP4: the code indexes the doubled E2M1 levels; the scale is the block's power of two.
float dot_mxfp4(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / kLegacyBlock; ++b) {
    const auto wb = load_block<tensor::BlockMXFP4>(w, b);
    const auto xb = load_block<tensor::BlockQ8_0>(x, b);
    int sumi = 0;
    for (int j = 0; j < kLegacyBlock; ++j) sumi += tensor::kMxfp4Levels[nibble(wb.qs, j)] * xb.qs[j];
    sum += static_cast<float>(sumi) * (tensor::mxfp4_scale(wb.e) * fp16_to_float(xb.d));
  }
  return sum;
}

// Per super-block one integer: |sum| <= 8 sub-blocks x 32 x 32 x 127 x 127 < 2^27.
float dot_iq4_xs(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  for (int64_t b = 0; b < cols / tensor::kSuperBlock; ++b) {
    const auto wb = load_block<tensor::BlockIQ4_XS>(w, b);
    const auto xb = load_block<tensor::BlockQ8_K>(x, b);
    int scaled = 0;
    for (int s = 0; s < tensor::kSuperBlock / kLegacyBlock; ++s) {
      const int ls = (((wb.scales_l[s / 2] >> (4 * (s % 2))) & 15) | (((wb.scales_h >> (2 * s)) & 3) << 4)) - 32;
      int sub = 0;
      for (int j = 0; j < kLegacyBlock; ++j) sub += iq4_level(wb.qs + 16 * s, j) * xb.qs[32 * s + j];
      scaled += ls * sub;
    }
    sum += fp16_to_float(wb.d) * xb.d * static_cast<float>(scaled);
  }
  return sum;
}

// All K-quants go through the uniform decoded form of kquant_decode.h.
template <DecodeSuperFn decode>
float dot_k(const uint8_t* w, const uint8_t* x, int64_t cols) {
  float sum = 0.0f;
  DecodedSuper ws;
  for (int64_t b = 0; b < cols / tensor::kSuperBlock; ++b) {
    decode(w, b, ws);
    const auto xb = load_block<tensor::BlockQ8_K>(x, b);
    int scaled = 0, mins = 0;
    for (int s = 0; s < 16; ++s) {
      int sub = 0;
      for (int l = 0; l < 16; ++l) sub += ws.codes[16 * s + l] * xb.qs[16 * s + l];
      scaled += ws.sc[s] * sub;
      mins += ws.mn[s] * xb.bsums[s];
    }
    sum += ws.d * xb.d * static_cast<float>(scaled) - ws.dmin * xb.d * static_cast<float>(mins);
  }
  return sum;
}

// Float weights against f32 activations.
template <typename Widen>
float dot_float(const uint8_t* w, const uint8_t* x, int64_t cols, Widen widen) {
  const auto* xf = reinterpret_cast<const float*>(x);
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum += widen(w, c) * xf[c];
  return sum;
}

float dot_f32(const uint8_t* w, const uint8_t* x, int64_t cols) {
  return dot_float(w, x, cols, [](const uint8_t* p, int64_t c) {
    float v;
    std::memcpy(&v, p + 4 * c, 4);
    return v;
  });
}

float dot_f16(const uint8_t* w, const uint8_t* x, int64_t cols) {
  return dot_float(w, x, cols, [](const uint8_t* p, int64_t c) {
    uint16_t h;
    std::memcpy(&h, p + 2 * c, 2);
    return fp16_to_float(h);
  });
}

float dot_bf16(const uint8_t* w, const uint8_t* x, int64_t cols) {
  return dot_float(w, x, cols, [](const uint8_t* p, int64_t c) {
    uint16_t h;
    std::memcpy(&h, p + 2 * c, 2);
    return tensor::bf16_to_float(h);
  });
}

// ---- tiles and the table ----

using RowDotFn = float (*)(const uint8_t*, const uint8_t*, int64_t);

template <RowDotFn dot, int NT>
void tile(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int64_t cols, float* out) {
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < kTileRows; ++r) out[t * kTileRows + r] = dot(w_rows[r], x_rows[t], cols);
  }
}

template <DType act>
void quantize_activations(const float* x, void* dst, int64_t cols) {
  quantize_activation_row(act, x, dst, cols);
}

template <DType act, RowDotFn dot>
constexpr TypeKernels make_kernels() {
  return TypeKernels{act, act == DType::F32 ? nullptr : &quantize_activations<act>,
                     {&tile<dot, 1>, &tile<dot, 2>, &tile<dot, 3>, &tile<dot, 4>}};
}

constexpr TypeKernels kQ4_0 = make_kernels<DType::Q8_0, dot_q4_0>();
constexpr TypeKernels kQ4_1 = make_kernels<DType::Q8_1, dot_q4_1>();
constexpr TypeKernels kQ5_0 = make_kernels<DType::Q8_0, dot_q5_0>();
constexpr TypeKernels kQ5_1 = make_kernels<DType::Q8_1, dot_q5_1>();
constexpr TypeKernels kQ8_0 = make_kernels<DType::Q8_0, dot_q8_0>();
constexpr TypeKernels kQ2_K = make_kernels<DType::Q8_K, dot_k<decode_q2_k>>();
constexpr TypeKernels kQ3_K = make_kernels<DType::Q8_K, dot_k<decode_q3_k>>();
constexpr TypeKernels kQ4_K = make_kernels<DType::Q8_K, dot_k<decode_q4_k>>();
constexpr TypeKernels kQ5_K = make_kernels<DType::Q8_K, dot_k<decode_q5_k>>();
constexpr TypeKernels kQ6_K = make_kernels<DType::Q8_K, dot_k<decode_q6_k>>();
constexpr TypeKernels kIQ4_NL = make_kernels<DType::Q8_0, dot_iq4_nl>();
constexpr TypeKernels kIQ4_XS = make_kernels<DType::Q8_K, dot_iq4_xs>();
constexpr TypeKernels kMXFP4 = make_kernels<DType::Q8_0, dot_mxfp4>();
constexpr TypeKernels kF32 = make_kernels<DType::F32, dot_f32>();
constexpr TypeKernels kF16 = make_kernels<DType::F32, dot_f16>();
constexpr TypeKernels kBF16 = make_kernels<DType::F32, dot_bf16>();

}  // namespace

const TypeKernels* scalar_kernels(DType type) {
  switch (type) {
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q8_0: return &kQ8_0;
    case DType::Q2_K: return &kQ2_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::IQ4_NL: return &kIQ4_NL;
    case DType::IQ4_XS: return &kIQ4_XS;
    case DType::MXFP4: return &kMXFP4;
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    case DType::BF16: return &kBF16;
    default: return nullptr;
  }
}

}  // namespace lumen::backend::cpu::detail
