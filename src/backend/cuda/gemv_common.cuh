#pragma once
// What the GEMV files share (gemv.cu, gemv_stream.cu, gemv_tiled.cu, gemv_pipelined.cu): loading a
// unit's activation codes, a float row's vectors widened, a warp's per-token results, and the
// switch from a weight type to a kernel instantiated for it.
#include <cstdint>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/hd_math.h"
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

// The values of a 16-byte vector of a float row: 4 (F32) or 8 (F16, BF16).
template <tensor::DType F>
inline constexpr int kVectorValues = F == tensor::DType::F32 ? 4 : 8;

// A float row's 16-byte vector, widened to f32 exactly.
template <tensor::DType F>
__device__ __forceinline__ void widen_vector(const uint4& v, float* out) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (F == tensor::DType::F32) {
      out[k] = __uint_as_float(words[k]);
    } else if constexpr (F == tensor::DType::F16) {
      out[2 * k] = hd::half_to_float(static_cast<uint16_t>(words[k] & 0xFFFFu));
      out[2 * k + 1] = hd::half_to_float(static_cast<uint16_t>(words[k] >> 16));
    } else {
      out[2 * k] = __uint_as_float(words[k] << 16);
      out[2 * k + 1] = __uint_as_float(words[k] & 0xFFFF0000u);
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
    case DType::IQ4_NL: launch.template operator()<DType::IQ4_NL>(); return true;
    case DType::IQ4_XS: launch.template operator()<DType::IQ4_XS>(); return true;
    case DType::MXFP4: launch.template operator()<DType::MXFP4>(); return true;
    default: return false;
  }
}

}  // namespace lumen::backend::cuda
