#include "backend/cuda/step_timer.h"

#include "backend/cuda/device_memory.h"

namespace lumen::backend::cuda {

StepTimer::~StepTimer() {
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

void StepTimer::enable(bool on) {
  if (on && start_ == nullptr) {
    check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  enabled_ = on;
  pending_ = started_ = false;
}

void StepTimer::started(cudaStream_t stream) {
  started_ = pending_ = false;
  if (!enabled_) return;
  check_cuda(cudaEventRecord(start_, stream), "cudaEventRecord");
  started_ = true;
}

void StepTimer::stopped(cudaStream_t stream) {
  if (!started_) return;
  check_cuda(cudaEventRecord(stop_, stream), "cudaEventRecord");
  pending_ = true;
}

void StepTimer::finished() {
  if (!pending_) return;
  pending_ = started_ = false;
  float ms = 0.0f;
  check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
  steps_ += 1;
  seconds_ += static_cast<double>(ms) * 1e-3;
}

}  // namespace lumen::backend::cuda
