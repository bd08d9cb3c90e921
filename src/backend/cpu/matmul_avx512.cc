// The AVX-512 level: x86_tiles.h compiled with AVX-512 F/BW/VL + VNNI on top of AVX2 (set per
// source in CMakeLists.txt). The kernels stay on 256-bit vectors (on Zen 4 a 512-bit op costs two
// 256-bit ones anyway) but gain vpdpbusd / vpdpwssd and 32 vector registers.
#include "backend/cpu/matmul_kernels.h"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__) && defined(__FMA__)
#include "backend/cpu/x86_tiles.h"
#define LUMEN_HAVE_AVX512_TILES 1
#endif

namespace lumen::backend::cpu::detail {

const TypeKernels* avx512_kernels(tensor::DType type) {
#ifdef LUMEN_HAVE_AVX512_TILES
  return x86_kernels_for(type);
#else
  (void)type;
  return nullptr;
#endif
}

}  // namespace lumen::backend::cpu::detail
