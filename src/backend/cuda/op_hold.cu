// The hold kernel of op_hold.h, and its release.
#include <atomic>

#include "backend/cuda/op_hold.h"

namespace lumen::backend::cuda {

namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void op_hold_kernel(const volatile uint32_t* flag, uint32_t* timed_out, uint64_t timeout_ns) {
  const uint64_t start = global_ns();
  while (*flag == 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(2000);
  }
}

std::atomic<uint32_t*> g_hold{nullptr};
std::atomic<uint64_t> g_hold_number{0};  // the hold on now (0: none)
std::atomic<uint64_t> g_holds_made{0};

}  // namespace

void launch_op_hold(const volatile uint32_t* flag, uint32_t* timed_out, uint64_t timeout_ns, cudaStream_t stream) {
  op_hold_kernel<<<1, 1, 0, stream>>>(flag, timed_out, timeout_ns);
}

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
