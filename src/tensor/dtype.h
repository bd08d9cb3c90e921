#pragma once
// Tensor element types as GGUF stores them (ggml's numbering), with their block geometry.
// Every ggml type a GGUF file may legally contain is known here, so the reader can validate
// and `lumen inspect` can describe any model; which of them Lumen can compute with is a
// separate question answered by has_reference_kernels().
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lumen::tensor {

enum class DType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
  // Not a ggml type: OCP FP8 E4M3 (tensor/fp8.h), which only the KV cache stores
  // (--kv-cache-dtype fp8_e4m3). Its id lies outside ggml's numbering, so no file can hold it
  // and dtype_info(raw id) / dtype_from_name never return it; dtype_info(DType) describes it.
  FP8_E4M3 = 0x10000,
};

struct DTypeInfo {
  DType type;
  std::string_view name;   // as ggml and gguf-py spell it: "Q4_K", "BF16"
  int64_t block_elements;  // elements per block (1 for plain types)
  size_t block_bytes;      // bytes per block
};

// The info for a raw type id from a file, or nullptr for ids that are unknown or were removed
// from ggml (4, 5, 31-33, 36-38): such a file cannot be read.
const DTypeInfo* dtype_info(uint32_t raw_type);
const DTypeInfo& dtype_info(DType type);
std::optional<DType> dtype_from_name(std::string_view name);  // case-insensitive
std::string_view dtype_name(DType type);

// Bytes of a row of `elements` values, or nullopt when elements is not a whole number of blocks
// or the size overflows.
std::optional<uint64_t> row_bytes(DType type, int64_t elements);

// True for the types that have a reference dequantize (and quantize) in this module.
bool has_reference_kernels(DType type);

}  // namespace lumen::tensor
