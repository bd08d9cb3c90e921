#pragma once
// The tensor cores' warp-wide f16 product, mma.sync.m16n8k16 with f32 accumulators (the register
// layout is mma_fragments.h's): c += a b for one warp's fragments; and the signed-byte one. Device
// code only; the kernels that use them (tensor_core_prefill.cu, gemm_experts.cu, gemm_int8.cu) are
// launched on sm_80 or newer.
#include <cstdint>

namespace lumen::backend::cuda::mma {

__device__ __forceinline__ void mma_f16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(LUMEN_CUDA_SIM)
  ::cuda_sim::mma_f16(c, a, b);  // tests/unit/cuda_sim's simulated device
#else
  __trap();  // the backend asks for sm_80 or newer before it launches these kernels
#endif
}

// The signed-byte product mma.sync.m16n8k32 with int32 accumulators (int8_gemm_math.h's layout):
// c += a b, exact.
__device__ __forceinline__ void mma_s8(int c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(LUMEN_CUDA_SIM)
  ::cuda_sim::mma_s8(c, a, b);
#else
  __trap();
#endif
}

// The signed-byte product of half the depth, mma.sync.m16n8k16 (int8_gemm_kquant_math.h's
// layout: a m16n8k32's A registers {0, 1} or {2, 3} and B register 0 or 1): c += a b, exact.
__device__ __forceinline__ void mma_s8_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a0), "r"(a1), "r"(b));
#elif defined(LUMEN_CUDA_SIM)
  ::cuda_sim::mma_s8_k16(c, a0, a1, b);
#else
  __trap();
#endif
}

}  // namespace lumen::backend::cuda::mma
