// op_hold.h's host bookkeeping: which hold is on, and its release (the kernel: op_hold.cu). Plain
// C++, so tests/unit/cuda_sim's simulated backend shares it.
#include <atomic>

#include "backend/cuda/op_hold.h"

namespace lumen::backend::cuda {

namespace {

std::atomic<uint32_t*> g_hold{nullptr};
std::atomic<uint64_t> g_hold_number{0};  // the hold on now (0: none)
std::atomic<uint64_t> g_holds_made{0};

}  // namespace

void set_op_hold(uint32_t* flag) {
  g_hold_number.store(flag != nullptr ? ++g_holds_made : 0);
  g_hold.store(flag, std::memory_order_release);
}

void release_op_hold() {
  if (uint32_t* flag = g_hold.exchange(nullptr, std::memory_order_acq_rel)) {
    g_hold_number.store(0);
    std::atomic_ref<uint32_t>(*flag).store(1, std::memory_order_seq_cst);
  }
}

uint64_t current_op_hold() { return g_hold_number.load(); }

}  // namespace lumen::backend::cuda
