#pragma once
// What the three quantized GEMV files share (gemv.cu, gemv_stream.cu, gemv_tiled.cu): loading a
// unit's activation codes, a warp's per-token results, and the switch from a weight type to a
// kernel instantiated for it.
#include <cstdint>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda {

// The 32 activation codes of one unit of a token: 8 words of 4 int8 in element order, two
// 16-byte loads (units start at multiples of 32 bytes).
__device__ __forceinline__ void load_activation_codes(const int8_t* qs, int xq[8]) {
  const int4* p = reinterpret_cast<const int4*>(qs);
  const int4 a = p[0], b = p[1];
  const int words[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
  for (int k = 0; k < 8; ++k) xq[k] = words[k];
}

// Writes the warp's sum of acc[t] (a fixed butterfly) to y[t * ys + row] for t < nt <= NT.
template <int NT>
__device__ __forceinline__ void store_warp_results(const float* acc, int nt, float* y, int64_t ys, int64_t row) {
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t < nt) {
      const float total = warp_sum(acc[t]);
      if (threadIdx.x % 32 == 0) y[t * ys + row] = total;
    }
  }
}

// launch.template operator()<F>() for the quantized weight type F the GEMV kernels take; false
// (nothing launched) for any other type.
template <typename Launch>
bool dispatch_quantized_gemv(tensor::DType type, Launch&& launch) {
  using tensor::DType;
  switch (type) {
    case DType::Q4_0: launch.template operator()<DType::Q4_0>(); return true;
    case DType::Q4_1: launch.template operator()<DType::Q4_1>(); return true;
    case DType::Q5_0: launch.template operator()<DType::Q5_0>(); return true;
    case DType::Q5_1: launch.template operator()<DType::Q5_1>(); return true;
    case DType::Q8_0: launch.template operator()<DType::Q8_0>(); return true;
    case DType::Q2_K: launch.template operator()<DType::Q2_K>(); return true;
    case DType::Q3_K: launch.template operator()<DType::Q3_K>(); return true;
    case DType::Q4_K: launch.template operator()<DType::Q4_K>(); return true;
    case DType::Q5_K: launch.template operator()<DType::Q5_K>(); return true;
    case DType::Q6_K: launch.template operator()<DType::Q6_K>(); return true;
    default: return false;
  }
}

}  // namespace lumen::backend::cuda
