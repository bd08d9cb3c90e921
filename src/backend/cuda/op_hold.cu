// The hold kernel of op_hold.h (its host bookkeeping: op_hold.cc).

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

}  // namespace

void launch_op_hold(const volatile uint32_t* flag, uint32_t* timed_out, uint64_t timeout_ns, cudaStream_t stream) {
  op_hold_kernel<<<1, 1, 0, stream>>>(flag, timed_out, timeout_ns);
}

}  // namespace lumen::backend::cuda
