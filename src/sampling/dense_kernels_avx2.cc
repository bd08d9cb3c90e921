// The dense kernels on 256-bit vectors; this file alone is compiled with -mavx2 and is called
// only when the CPU has AVX2 (dense_kernels_portable.cc decides).
#include "sampling/dense_kernels.h"

namespace lumen::sampling::kernels {

namespace {
using VecF = float __attribute__((vector_size(32)));
using VecI = int32_t __attribute__((vector_size(32)));
using Avx2 = VectorKernels<VecF, VecI>;
}  // namespace

const DenseKernels& avx2_kernel_table();

const DenseKernels& avx2_kernel_table() {
  static constexpr DenseKernels kernels{"avx2", &Avx2::max, &Avx2::exp_sum, &Avx2::exp_moments};
  return kernels;
}

}  // namespace lumen::sampling::kernels
