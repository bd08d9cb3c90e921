// The attention tile loops of attention_tiles_simd.h for AVX2 + FMA + F16C. This file is
// compiled with -mavx2 -mfma -mf16c; nothing here may run before cpu_features says the CPU has
// them.
#include "backend/cpu/attention_tiles.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "backend/cpu/attention_tiles_simd.h"

namespace lumen::backend::cpu {
const AttentionTileKernels* avx2_attention_tiles() { return &kSimdTiles; }
}  // namespace lumen::backend::cpu

#else

namespace lumen::backend::cpu {
const AttentionTileKernels* avx2_attention_tiles() { return nullptr; }
}  // namespace lumen::backend::cpu

#endif
