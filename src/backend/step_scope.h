#pragma once
// One forward pass as a step of a backend (backend.h's step boundary), closed on every path: a
// pass that throws part way (a bad batch, an injected fault) aborts its step, so the backend is
// ready for the next one.
#include "backend/backend.h"

namespace lumen::backend {

class StepScope {
 public:
  StepScope(Backend& backend, const StepMetadata& step) : backend_(backend) { backend_.begin_step(step); }
  ~StepScope() {
    if (open_) backend_.abort_step();
  }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

  // Where the output projection writes the logits (Backend::step_logits).
  TensorView logits() { return backend_.step_logits(); }
  // Ends the step: its logits are in the host array afterwards.
  void finish() {
    open_ = false;
    backend_.end_step();
  }

 private:
  Backend& backend_;
  bool open_ = true;
};

}  // namespace lumen::backend
