#pragma once
// The error a request's output constraint raises (lumen/sampling_params.h: StructuredOutputs).
#include "lumen/error.h"

namespace lumen {

// A request's output constraint (a JSON Schema, regex, choice list or GBNF grammar) cannot be
// used: it does not parse or convert, or compiling it for the model's vocabulary would pass a
// work limit. Engine::add_request throws it, queueing nothing; the message says what is wrong
// and, for grammar text, where. Always the caller's error (the server's 400).
class ConstraintError : public Error {
 public:
  using Error::Error;
};

}  // namespace lumen
