#pragma once
// Internal to the CUDA backend: what the code outside the step recorder (step_graphs.h) must know
// about a step being recorded into a CUDA graph. While a thread records, the kernels it queues
// are not run but written down, to be replayed by later steps with the same arguments. Anything
// whose effect a replay would not repeat must not happen then: a copy of host arrays that change
// from step to step, an allocation, a wait for the device. Code that would do one calls
// refuse_in_capture first, which throws CaptureUnsafe while this thread records; the recorder
// then drops the recording and runs the step as it always did.
//
// Device allocations and frees made through the backend advance an epoch: a recording holds the
// addresses it was made with, so one made in an earlier epoch is never replayed.
#include <cstdint>
#include <stdexcept>

namespace lumen::backend::cuda {

class CaptureUnsafe : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether this thread is recording a step (set only by StepGraphs).
bool capturing();
void set_capturing(bool on);
// Throws CaptureUnsafe naming `what` while this thread records.
void refuse_in_capture(const char* what);

// Advanced by every device allocation and free of the CUDA backend (process-wide: it only makes
// recordings be remade more often than needed when several backends allocate).
uint64_t allocation_epoch();
void advance_allocation_epoch();

}  // namespace lumen::backend::cuda
