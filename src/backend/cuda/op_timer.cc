#include "backend/cuda/op_timer.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>

#include "backend/cuda/device_memory.h"
#include "backend/cuda/op_hold.h"

namespace lumen::backend::cuda {

OpTimer::~OpTimer() {
  release_op_hold();
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  if (flags_ != nullptr) {
    set_op_hold(nullptr);
    cudaFreeHost(flags_);
  }
}

void OpTimer::enable(bool on) {
  release_op_hold();
  if (on && flags_ == nullptr) {
    void* host = nullptr;
    check_cuda(cudaHostAlloc(&host, 2 * sizeof(uint32_t), cudaHostAllocMapped), "cudaHostAlloc");
    flags_ = static_cast<uint32_t*>(host);
    flags_[0] = flags_[1] = 0;
    void* device = nullptr;
    check_cuda(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
    device_flags_ = static_cast<uint32_t*>(device);
  }
  enabled_ = on;
  used_ = 0;
}

void OpTimer::count_timeout() {
  if (!held_) return;
  held_ = false;
  if (std::atomic_ref<uint32_t>(flags_[1]).load() != 0) {
    if (holds_timed_out_++ == 0) {
      fmt::print(stderr,
                 "lumen: timing ops on the device: a step's hold ran out before the host waited for it (a wait "
                 "the CUDA backend does not release); that step's op times include the host's pace\n");
    }
  }
}

void OpTimer::hold(cudaStream_t stream) {
  // The last hold must have ended before its flag is reset: let it go and wait for it.
  release_op_hold();
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  count_timeout();
  std::atomic_ref<uint32_t>(flags_[0]).store(0);
  std::atomic_ref<uint32_t>(flags_[1]).store(0);
  launch_op_hold(device_flags_, device_flags_ + 1, kHoldTimeoutNs, stream);
  check_cuda(cudaGetLastError(), "the op hold's launch");
  held_ = true;
  set_op_hold(flags_);
}

void OpTimer::mark(cudaStream_t stream) {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  check_cuda(cudaEventRecord(events_[used_++], stream), "cudaEventRecord");
}

std::vector<double> OpTimer::take() {
  release_op_hold();
  std::vector<double> out;
  if (used_ == 0) return out;
  check_cuda(cudaEventSynchronize(events_[used_ - 1]), "cudaEventSynchronize");
  count_timeout();
  out.reserve(used_);
  for (size_t i = 0; i < used_; ++i) {
    float ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms, events_[0], events_[i]), "cudaEventElapsedTime");
    out.push_back(static_cast<double>(ms) * 1e6);
  }
  used_ = 0;
  return out;
}

}  // namespace lumen::backend::cuda
