#pragma once
// What every part of a render shares: call arguments, the resource limits that keep a hostile
// template from running away (steps, time, memory held, output size, call depth), and the fixed
// clock that strftime_now() reads so renders are reproducible.
#include <chrono>
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
  // Everything the template's values hold at once (memory_budget.h): lists, dicts, strings.
  size_t max_held_bytes = size_t{32} << 20;
  // CPU time of one render (its thread's): the step limit alone lets a template spend seconds
  // of CPU when its steps are costly (each sorting a long list). CPU time, not wall-clock time,
  // so a loaded machine does not fail renders that would pass on an idle one.
  std::chrono::milliseconds max_time{2000};
};

class Runtime {
 public:
  Runtime(RenderLimits limits, std::time_t now)
      : limits_(limits),
        now_(now),
        budget_(limits.max_held_bytes),
        cpu_start_(thread_cpu_now()),
        deadline_(coarse_now() + std::chrono::nanoseconds(limits.max_time).count()) {}

  const RenderLimits& limits() const { return limits_; }
  std::time_t now() const { return now_; }
  // The budget the render's values charge (made the thread's own by the renderer: BudgetScope).
  MemoryBudget& budget() { return budget_; }
  const MemoryBudget& budget() const { return budget_; }

  void step() {
    if (++steps_ > limits_.max_steps) fail_limit("the template ran too long (step limit)");
    // Every step: one step can cost milliseconds (sorting a long list), so sampling every N
    // steps would overrun by N of them. The coarse clock costs a few nanoseconds (it reads the
    // kernel's tick, a few ms apart); the thread's CPU clock (a system call) is read only when
    // the wall-clock deadline passes, which it cannot do before the CPU time is spent.
    if (coarse_now() > deadline_) check_cpu_time();
  }
  void check_size(size_t bytes) const {
    if (bytes > limits_.max_output_bytes) fail_limit("the template output grew past the size limit");
  }
  [[noreturn]] static void fail_limit(const char* what);
  // Nanoseconds of CLOCK_MONOTONIC_COARSE, and of the calling thread's CPU time.
  static int64_t coarse_now();
  static int64_t thread_cpu_now();

  // Invokes a callable value (builtin function, bound method or macro).
  Value call(const Value& callee, const CallArgs& args);

  int call_depth = 0;
  int line = 0;  // line of the node being evaluated, for error messages

 private:
  RenderLimits limits_;
  std::time_t now_;
  MemoryBudget budget_;
  void check_cpu_time();

  int64_t cpu_start_;  // thread_cpu_now() when the render began
  int64_t deadline_;   // coarse_now() past which the CPU time is read again
  uint64_t steps_ = 0;
};

}  // namespace lumen::chat
