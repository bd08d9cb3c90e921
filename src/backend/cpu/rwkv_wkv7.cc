#include "backend/cpu/rwkv_wkv7.h"

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/rwkv_wkv7_kernel.h"

namespace lumen::backend::cpu {

void detail::wkv7_head_portable(const Wkv7Task& task, int64_t head) { wkv7_head_loop(task, head); }

void wkv7_head(const Wkv7Task& task, int64_t head) {
  static const bool use_avx2 = detail::have_wkv7_avx2() && selected_isa() >= Isa::kAvx2;
  if (use_avx2) {
    detail::wkv7_head_avx2(task, head);
  } else {
    detail::wkv7_head_portable(task, head);
  }
}

}  // namespace lumen::backend::cpu
