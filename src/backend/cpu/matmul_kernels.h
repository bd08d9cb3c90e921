#pragma once
// Internal to the CPU matmul: the contract between the dispatcher (matmul.cc, matmul_parts.cc) and the kernels of
// each instruction-set level (matmul_scalar.cc, matmul_avx2.cc, matmul_avx512.cc).
//
// Work is cut into tiles of kTileRows weight rows x up to kMaxTileTokens tokens. A tile kernel
// reads each weight block once and uses it for every token of the tile, which is what makes the
// prefill GEMM compute-bound instead of memory-bound; for decode (one token) the same kernel is a
// GEMV over four rows at a time.
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace lumen::backend::cpu::detail {

inline constexpr int kTileRows = 4;
inline constexpr int kMaxTileTokens = 4;

// Quantizes one activation row of `cols` values (a whole number of blocks) into the block type
// that pairs with the weight type.
using QuantizeRowFn = void (*)(const float* x, void* dst, int64_t cols);

// out[t * kTileRows + r] = dot(weight row w_rows[r], activation row x_rows[t]) over `cols`
// elements, for r < kTileRows and t < NT (the tile's token count, fixed per function). Rows may
// repeat (the dispatcher pads a short tile with copies of its last row).
using TileFn = void (*)(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int64_t cols,
                        float* out);

// Like TileFn for a run-time token count nt <= kMaxPanelTokens. Formats whose blocks are costly
// to unpack (the K-quants) provide it, so one unpacking serves a whole task's tokens.
inline constexpr int kMaxPanelTokens = 64;
using PanelFn = void (*)(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int nt,
                         int64_t cols, float* out);

struct TypeKernels {
  tensor::DType act_type;         // F32: the activations are used as they are
  QuantizeRowFn quantize;         // null when act_type is F32
  TileFn tile[kMaxTileTokens];    // tile[nt - 1] handles nt tokens
  PanelFn panel = nullptr;        // optional; used when a task has more than kMaxTileTokens
};

// ---- packed weights (matmul_packed.h): groups of kPackRows rows, AVX-512 VNNI only ----
//
// A packed activation row holds, for `cols` values in B = cols / 32 blocks: the int8 codes
// (cols bytes, contiguous), then B f32 scales d, then B x extra_words 4-byte words the type's
// kernel needs (offset corrections -offset * sum(codes), or Q8_1's s). Their values are those of
// the Q8_0 / Q8_1 rows of the type's quantizer (d and s rounded to f16 and back, as those rows
// store them), so the same as the unpacked path's.
inline constexpr int kMaxPackedTokens = 8;

inline size_t packed_activation_bytes(int64_t cols, int extra_words) {
  const auto blocks = static_cast<size_t>(cols / 32);
  return (static_cast<size_t>(cols) + 4 * blocks * (1 + static_cast<size_t>(extra_words)) + 63) / 64 * 64;
}

// Quantizes one f32 activation row straight into the packed form (no Q8 row in between).
using QuantizePackedFn = void (*)(const float* x, uint8_t* dst, int64_t cols);

// out[t * kPackRows + r] = dot(row r of the packed group, packed activation row t) for
// r < kPackRows and t < NT (fixed per function), where row t starts at x + t * x_stride. (One base
// and a stride rather than a pointer per token: the kernels address every token from the same
// registers instead of keeping eight pointers live.)
using PackedTileFn = void (*)(const uint8_t* group, int64_t cols, const uint8_t* x, size_t x_stride,
                              float* out);

struct PackedKernels {
  QuantizePackedFn quantize_packed;
  int extra_words;                      // per block of a packed activation row
  PackedTileFn tile[kMaxPackedTokens];  // tile[nt - 1] handles nt tokens
};

// The packed kernels for a weight type, or nullptr (type without a packed layout, or a build
// without AVX-512). Only to be called when the CPU has AVX-512 VNNI.
const PackedKernels* packed_kernels(tensor::DType type);
// The K-quants' share of packed_kernels (matmul_packed_kquant_avx512.cc).
const PackedKernels* packed_kquant_kernels(tensor::DType type);

// The kernels of one level for a weight type, or nullptr when that level has none for it (the
// dispatcher then falls back to a lower level). Every level returns the same act_type for a type,
// so activations quantized by one level's quantizer are valid for another's tiles.
const TypeKernels* scalar_kernels(tensor::DType type);
const TypeKernels* avx2_kernels(tensor::DType type);
const TypeKernels* avx512_kernels(tensor::DType type);

}  // namespace lumen::backend::cpu::detail
