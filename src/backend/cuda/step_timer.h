#pragma once
// Device time of whole steps, measured with two CUDA events on the backend's stream: one at
// begin_step (before the metadata upload), one at end_step (after the last copy back). With a
// step replayed from a CUDA graph the host enqueues everything at once, so the time between the
// events is the device's; the step's wall time minus it is what the host adds in series (its
// own preparation, the launch, the wait). Off until asked for: two event records a step.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lumen::backend::cuda {

class StepTimer {
 public:
  StepTimer() = default;
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  // Starts or stops timing; the events are made on the first start.
  void enable(bool on);
  bool enabled() const { return enabled_; }
  // At begin_step and before end_step's wait; `finished` after the wait, adding the step's time.
  void started(cudaStream_t stream);
  void stopped(cudaStream_t stream);
  void finished();
  // A step that ends without a wait (nothing comes back) or is aborted is not counted.
  void discard() { pending_ = false; }
  // Steps timed (those that waited for the device at their end) and their device time, summed.
  uint64_t steps() const { return steps_; }
  double seconds() const { return seconds_; }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  bool enabled_ = false;
  bool pending_ = false;  // both events recorded for the open step
  bool started_ = false;
  uint64_t steps_ = 0;
  double seconds_ = 0.0;
};

}  // namespace lumen::backend::cuda
