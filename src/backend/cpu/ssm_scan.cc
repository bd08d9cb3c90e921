#include "backend/cpu/ssm_scan.h"

#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/ssm_scan_kernel.h"

namespace lumen::backend::cpu {

float ssm_softplus(float v) { return v > 20.0f ? v : std::log(1.0f + std::exp(v)); }

void detail::ssm_scan_head_portable(const SsmScanTask& task, int64_t head) { scan_head(task, head); }

void ssm_scan_head(const SsmScanTask& task, int64_t head) {
  static const bool use_avx2 = detail::have_ssm_scan_avx2() && selected_isa() >= Isa::kAvx2;
  if (use_avx2) {
    detail::ssm_scan_head_avx2(task, head);
  } else {
    detail::ssm_scan_head_portable(task, head);
  }
}

}  // namespace lumen::backend::cpu
