#pragma once
// One warp's pass over one quantized weight row for up to NT tokens, gemv.cu's arithmetic and
// order: lane i adds blocks i, i + 32, ... (K-quants: units of 32 values, 8 lanes a super-block)
// into acc[t], for the activation row token_of(t). The caller adds the lanes
// (store_warp_results). gemv.cu's kernels run it for a matrix's rows and consecutive tokens,
// gemv_experts.cu's for an expert's rows and the (token, slot) pairs that chose it, so the two
// give the same bits for the same row and token.
#include <cstdint>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

template <tensor::DType F, int NT, typename TokenOf>
__device__ __forceinline__ void legacy_row_dot(const uint8_t* wrow, int64_t cols, const Q8Activations& x,
                                               TokenOf token_of, int nt, float (&acc)[NT], int lane) {
  const int64_t blocks = cols / 32;
  for (int64_t b = lane; b < blocks; b += 32) {
    hd::LegacyBlock w;
    hd::decode_legacy<F>(wrow + b * hd::kBlockBytes<F>, w);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < nt) {
        const int64_t token = token_of(t);
        int xq[8];
        load_activation_codes(x.qs + token * cols + b * 32, xq);
        const float xs = hd::kHasMin<F> ? x.s[token * blocks + b] : 0.0f;
        acc[t] = __fadd_rn(acc[t], hd::legacy_dot<F>(w, xq, x.d[token * blocks + b], xs));
      }
    }
  }
}

// Every lane runs every iteration (the group shuffles need all 32); the 8 lanes of a
// super-block are valid or not together, since 32 is a multiple of 8.
template <tensor::DType F, int NT, typename TokenOf>
__device__ __forceinline__ void kquant_row_dot(const uint8_t* wrow, int64_t cols, const Q8Activations& x,
                                               TokenOf token_of, int nt, float (&acc)[NT], int lane) {
  const int64_t units = cols / 32;  // a multiple of 8
  const int64_t supers = cols / 256;
  const int j = lane % 8;
  for (int64_t u0 = 0; u0 < units; u0 += 32) {
    const int64_t unit = u0 + lane;
    const bool valid = unit < units;
    const int64_t sb = unit / 8;
    hd::KUnit w{};
    if (valid) hd::decode_kunit<F>(wrow + sb * hd::kBlockBytes<F>, j, w);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < nt) {
        const int64_t token = token_of(t);
        int scaled = 0, mins = 0;
        if (valid) {
          int xq[8];
          load_activation_codes(x.qs + token * cols + unit * 32, xq);
          hd::kunit_dot(w, xq, x.bsums + token * (cols / 16) + sb * 16 + 2 * j, scaled, mins);
        }
        scaled = group8_sum(scaled);
        mins = group8_sum(mins);
        if (valid && j == 0) {
          acc[t] = __fadd_rn(acc[t], hd::ksuper_value(w.d, w.dmin, x.d[token * supers + sb], scaled, mins));
        }
      }
    }
  }
}

// Either of the two by F's kind.
template <tensor::DType F, int NT, typename TokenOf>
__device__ __forceinline__ void quantized_row_dot(const uint8_t* wrow, int64_t cols, const Q8Activations& x,
                                                  TokenOf token_of, int nt, float (&acc)[NT], int lane) {
  if constexpr (hd::kIsKQuant<F>) {
    kquant_row_dot<F, NT>(wrow, cols, x, token_of, nt, acc, lane);
  } else {
    legacy_row_dot<F, NT>(wrow, cols, x, token_of, nt, acc, lane);
  }
}

}  // namespace lumen::backend::cuda
