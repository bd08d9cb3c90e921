// op_hold.h on the simulated device. On a GPU the hold kernel keeps the stream waiting while the
// host queues an op, so an op's timer measures the device alone; here every launch runs as it is
// queued, so the hold has nothing to hold: only its bookkeeping remains (op_timer.cc reads it).
#include "backend/cuda/op_hold.h"

#include <atomic>

namespace lumen::backend::cuda {
namespace {
std::atomic<uint32_t*> g_hold{nullptr};
std::atomic<uint64_t> g_hold_number{0};
std::atomic<uint64_t> g_holds_made{0};
}  // namespace

void launch_op_hold(const volatile uint32_t*, uint32_t*, uint64_t, cudaStream_t) {}

void set_op_hold(uint32_t* flag) {
  g_hold_number.store(flag != nullptr ? ++g_holds_made : 0);
  g_hold.store(flag);
}

void release_op_hold() {
  if (uint32_t* flag = g_hold.exchange(nullptr)) {
    g_hold_number.store(0);
    *flag = 1;
  }
}

uint64_t current_op_hold() { return g_hold_number.load(); }

}  // namespace lumen::backend::cuda
