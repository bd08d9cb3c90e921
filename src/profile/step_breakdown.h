#pragma once
// A recorded forward pass (or several repetitions of one) summed up: time, bytes and FLOPs per
// op and per part of the model, and how busy each worker thread was.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "profile/op_record.h"

namespace lumen::profile {

struct Totals {
  std::string name;
  int64_t calls = 0;  // per step
  double ns = 0;      // per step
  OpCost cost;        // per step
};

struct ThreadTotals {
  unsigned worker = 0;
  double task_ns = 0;  // running parallel_for tasks
  double idle_ns = 0;  // the rest of the step (worker 0: also the serial work between loops)
};

struct StepBreakdown {
  int repetitions = 0;
  double step_ns = 0;      // mean wall time of a recorded step
  double op_ns = 0;        // the ops' own time; step_ns - op_ns is the model code between them
  double parallel_ns = 0;  // when at least one worker ran a task
  std::vector<Totals> by_op;    // most time first
  std::vector<Totals> by_part;  // embedding, layer 0, 1, ..., head
  std::vector<Totals> by_op_in_part;  // "layer 3: attention", in the order the parts run
  std::vector<ThreadTotals> threads;
};

// `op_name` turns a record's name id into its text; `threads`: the pool's size (workers that
// never ran a task still get a row).
StepBreakdown break_down(std::span<const StepRecording> steps, const std::function<std::string(uint32_t)>& op_name,
                         unsigned threads);

// Nanoseconds covered by at least one of the spans (sorted by begin).
double covered_ns(std::span<const WorkerSpan> spans);

}  // namespace lumen::profile
