// The dense kernels on 128-bit vectors (SSE2 on x86-64, NEON elsewhere), and the choice of
// kernels at run time.
#include "sampling/dense_kernels.h"

namespace lumen::sampling::kernels {

namespace {
using VecF = float __attribute__((vector_size(16)));
using VecI = int32_t __attribute__((vector_size(16)));
using Portable = VectorKernels<VecF, VecI>;
}  // namespace

#ifdef LUMEN_SAMPLING_AVX2
const DenseKernels& avx2_kernel_table();  // dense_kernels_avx2.cc
#endif

const DenseKernels& portable_kernels() {
  static constexpr DenseKernels kernels{"portable", &Portable::max, &Portable::exp_sum,
                                        &Portable::exp_moments};
  return kernels;
}

const DenseKernels* avx2_kernels() {
#ifdef LUMEN_SAMPLING_AVX2
  if (__builtin_cpu_supports("avx2")) return &avx2_kernel_table();
#endif
  return nullptr;
}

const DenseKernels& best_kernels() {
  static const DenseKernels& best = avx2_kernels() ? *avx2_kernels() : portable_kernels();
  return best;
}

}  // namespace lumen::sampling::kernels
