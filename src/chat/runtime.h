#pragma once
// What every part of a render shares: call arguments, the resource limits that keep a hostile
// template from running away (steps, output size, call depth), and the fixed clock that
// strftime_now() reads so renders are reproducible.
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/value.h"
#include "util/error.h"

namespace lumen::chat {

// The conversation or its size, not the template, is at fault: the template refused it
// (raise_exception), or rendering it would pass a resource limit. Other render errors mean the
// template cannot handle a request it should (the server's fault, not the client's).
using RenderRefused = lumen::ChatRefused;  // public: include/lumen/error.h

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` among the positional ones, else the keyword `name`, else null.
  const Value* get(size_t index, std::string_view name) const;
  // Fails when more than `max_positional` positional arguments, or an unknown keyword, are given.
  void expect_at_most(std::string_view function, size_t max_positional,
                      std::initializer_list<std::string_view> keywords) const;
};

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;   // also the largest string a template may build
  uint64_t max_steps = 20'000'000;               // expression and statement evaluations
  int max_call_depth = 64;                       // nested macro calls
};

class Runtime {
 public:
  Runtime(RenderLimits limits, std::time_t now) : limits_(limits), now_(now) {}

  const RenderLimits& limits() const { return limits_; }
  std::time_t now() const { return now_; }

  void step() {
    if (++steps_ > limits_.max_steps) fail_limit("the template ran too long (step limit)");
  }
  void check_size(size_t bytes) const {
    if (bytes > limits_.max_output_bytes) fail_limit("the template output grew past the size limit");
  }
  [[noreturn]] static void fail_limit(const char* what);

  // Invokes a callable value (builtin function, bound method or macro).
  Value call(const Value& callee, const CallArgs& args);

  int call_depth = 0;
  int line = 0;  // line of the node being evaluated, for error messages

 private:
  RenderLimits limits_;
  std::time_t now_;
  uint64_t steps_ = 0;
};

}  // namespace lumen::chat
