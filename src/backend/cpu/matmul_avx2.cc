// The AVX2 + FMA + F16C level: x86_tiles.h compiled with those flags only (set per source in
// CMakeLists.txt, so the rest of the build stays portable). Reached only when cpu_features says
// the CPU has them.
#include "backend/cpu/matmul_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "backend/cpu/x86_tiles.h"
#endif

namespace lumen::backend::cpu::detail {

const TypeKernels* avx2_kernels(tensor::DType type) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  return x86_kernels_for(type);
#else
  (void)type;
  return nullptr;
#endif
}

}  // namespace lumen::backend::cpu::detail
