#pragma once
// Op times on the device's clock (Backend::time_ops on CUDA): a CUDA event recorded in the
// backend's stream at each mark, and a hold at each step's start (op_hold.h) so the step's ops
// run back to back once the host first waits for them. Off until asked for.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace lumen::backend::cuda {

class OpTimer {
 public:
  OpTimer() = default;
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // Starts or stops timing (the hold's flags are made on the first start); drops any marks.
  void enable(bool on);
  bool enabled() const { return enabled_; }
  // At begin_step: waits for the last step's work, then queues the hold.
  void hold(cudaStream_t stream);
  // An event at the point `stream`'s work has reached.
  void mark(cudaStream_t stream);
  // Releases the hold, waits for the last mark and returns each mark's time in nanoseconds after
  // the first (event resolution: about half a microsecond).
  std::vector<double> take();
  // Holds that ended by their timeout rather than a release (the host waited in a way the
  // backend does not release): those steps' op times include the host's pace.
  uint64_t holds_timed_out() const { return holds_timed_out_; }

 private:
  // Long enough for the host to queue a large prefill step op by op.
  static constexpr uint64_t kHoldTimeoutNs = 200'000'000;
  void count_timeout();

  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
  uint32_t* flags_ = nullptr;         // page-locked, mapped: [0] release, [1] timed out
  uint32_t* device_flags_ = nullptr;  // the device's address of the same memory
  bool enabled_ = false;
  bool held_ = false;  // a hold is queued whose end was not yet looked at
  uint64_t holds_timed_out_ = 0;
};

}  // namespace lumen::backend::cuda
