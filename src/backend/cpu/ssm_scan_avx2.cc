// The token-by-token scan (ssm_scan_kernel.h) compiled with -mavx2 -mfma: decode's scan on
// eight lanes. Called only when cpu_features reports AVX2.
#include "backend/cpu/ssm_scan.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "backend/cpu/ssm_scan_kernel.h"

namespace lumen::backend::cpu::detail {
bool have_ssm_scan_avx2() { return true; }
void ssm_scan_head_avx2(const SsmScanTask& task, int64_t head) { scan_head(task, head); }
}  // namespace lumen::backend::cpu::detail

#else

namespace lumen::backend::cpu::detail {
bool have_ssm_scan_avx2() { return false; }
void ssm_scan_head_avx2(const SsmScanTask&, int64_t) {}
}  // namespace lumen::backend::cpu::detail

#endif
