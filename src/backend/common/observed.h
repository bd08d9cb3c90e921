#pragma once
// Internal to the Backend's public methods (backend.cc, backend_attention.cc): a call shown to
// the observers around the backend's implementation, or just run when none watches.
#include "backend/backend.h"
#include "backend/op_observer.h"

namespace lumen::backend {

template <typename Body>
void Backend::observed(OpCall& call, Body&& body) {
  ++op_calls_;
  if (observers_.empty()) {
    body();
    return;
  }
  for (OpObserver* o : observers_) o->before_op(call);
  body();
  for (OpObserver* o : observers_) o->after_op(call);
}

}  // namespace lumen::backend
