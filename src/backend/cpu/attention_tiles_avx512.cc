// The attention tile loops of attention_tiles_simd.h compiled with AVX-512 F/VL on top of
// AVX2 + FMA + F16C: still 256-bit vectors and the AVX2 build's arithmetic bit for bit, but 32
// registers (more queries per pass over a tile) and masked FMAs for zero weights; the exact
// path's exponentials work on eight doubles per register (exp_f64_avx2.h), the same bits again.
// Reached only when cpu_features says the CPU has AVX-512.
#include "backend/cpu/attention_tiles.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVX512F__) && \
    defined(__AVX512VL__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_pd() as the unused merge source, which its
// -Wmaybe-uninitialized reports as a use of an uninitialized value (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "backend/cpu/attention_tiles_simd.h"

namespace lumen::backend::cpu {
const AttentionTileKernels* avx512_attention_tiles() { return &kSimdTiles; }
}  // namespace lumen::backend::cpu

#else

namespace lumen::backend::cpu {
const AttentionTileKernels* avx512_attention_tiles() { return nullptr; }
}  // namespace lumen::backend::cpu

#endif
