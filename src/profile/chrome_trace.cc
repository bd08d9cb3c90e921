#include "profile/chrome_trace.h"

#include <algorithm>

namespace lumen::profile {

namespace {

double micros(int64_t ns, int64_t origin) { return static_cast<double>(ns - origin) / 1000.0; }

nlohmann::json thread_name(int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}};
}

}  // namespace

nlohmann::json chrome_trace_events(const StepRecording& step, const std::function<std::string(uint32_t)>& op_name,
                                   const std::string& title, int pid) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", title}}}});
  events.push_back(thread_name(pid, 0, "ops"));
  const int64_t origin = step.begin_ns;
  for (const OpRecord& op : step.ops) {
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", 0},
                      {"name", op_name(op.name)},
                      {"cat", part_name(op.part)},
                      {"ts", micros(op.begin_ns, origin)},
                      {"dur", micros(op.end_ns, op.begin_ns)},
                      {"args", {{"part", part_name(op.part)}, {"bytes", op.cost.bytes}, {"flops", op.cost.flops}}}});
  }
  unsigned workers = 0;
  for (const WorkerSpan& s : step.spans) workers = std::max(workers, s.worker + 1);
  for (unsigned w = 0; w < workers; ++w) events.push_back(thread_name(pid, static_cast<int>(w) + 1, "worker " + std::to_string(w)));
  // Each span inside the op whose window holds its start (ops are sorted by begin, disjoint).
  size_t op = 0;
  for (const WorkerSpan& s : step.spans) {
    while (op + 1 < step.ops.size() && step.ops[op + 1].begin_ns <= s.begin_ns) ++op;
    const bool inside = !step.ops.empty() && step.ops[op].begin_ns <= s.begin_ns && s.begin_ns <= step.ops[op].end_ns;
    events.push_back({{"ph", "X"},
                      {"pid", pid},
                      {"tid", static_cast<int>(s.worker) + 1},
                      {"name", inside ? op_name(step.ops[op].name) : std::string("tasks")},
                      {"ts", micros(s.begin_ns, origin)},
                      {"dur", micros(s.end_ns, s.begin_ns)},
                      {"args", {{"tasks", s.tasks}}}});
  }
  return events;
}

nlohmann::json chrome_trace_document(nlohmann::json events) {
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
}

}  // namespace lumen::profile
