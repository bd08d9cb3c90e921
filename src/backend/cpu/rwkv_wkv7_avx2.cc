// The wkv7 loop (rwkv_wkv7_kernel.h) compiled with -mavx2 -mfma: eight lanes per state row.
// Called only when cpu_features reports AVX2.
#include "backend/cpu/rwkv_wkv7.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/rwkv_wkv7_kernel.h"

namespace lumen::backend::cpu::detail {
bool have_wkv7_avx2() { return true; }
void wkv7_head_avx2(const Wkv7Task& task, int64_t head) { wkv7_head_loop(task, head); }
}  // namespace lumen::backend::cpu::detail

#else

namespace lumen::backend::cpu::detail {
bool have_wkv7_avx2() { return false; }
void wkv7_head_avx2(const Wkv7Task&, int64_t) {}
}  // namespace lumen::backend::cpu::detail

#endif
