#include "profile/step_breakdown.h"

#include <algorithm>
#include <map>

namespace lumen::profile {

namespace {

// Orders parts as a forward pass runs them.
int part_order(int part) {
  if (part == kEmbedding) return -2;
  if (part == kHead) return 1 << 20;
  if (part < 0) return (1 << 20) + 1;
  return part;
}

void add_to(Totals& t, const OpRecord& op) {
  t.calls += 1;
  t.ns += static_cast<double>(op.end_ns - op.begin_ns);
  t.cost += op.cost;
}

void scale_down(Totals& t, double n) {
  t.calls = static_cast<int64_t>(static_cast<double>(t.calls) / n + 0.5);
  t.ns /= n;
  t.cost.bytes /= n;
  t.cost.flops /= n;
  t.cost.context_bytes /= n;
}

}  // namespace

double covered_ns(std::span<const WorkerSpan> spans) {
  double covered = 0;
  int64_t end = INT64_MIN;
  for (const WorkerSpan& s : spans) {
    const int64_t begin = std::max(s.begin_ns, end);
    if (s.end_ns > begin) covered += static_cast<double>(s.end_ns - begin);
    end = std::max(end, s.end_ns);
  }
  return covered;
}

StepBreakdown break_down(std::span<const StepRecording> steps, const std::function<std::string(uint32_t)>& op_name,
                         unsigned threads) {
  StepBreakdown out;
  out.repetitions = static_cast<int>(steps.size());
  if (steps.empty()) return out;
  std::map<uint32_t, Totals> by_op;
  std::map<int, Totals> by_part;
  std::map<std::pair<int, uint32_t>, Totals> by_op_in_part;
  std::vector<ThreadTotals> thread_totals(threads);
  for (unsigned w = 0; w < threads; ++w) thread_totals[w].worker = w;
  for (const StepRecording& step : steps) {
    const double step_ns = static_cast<double>(step.end_ns - step.begin_ns);
    out.step_ns += step_ns;
    out.parallel_ns += covered_ns(step.spans);
    for (const OpRecord& op : step.ops) {
      out.op_ns += static_cast<double>(op.end_ns - op.begin_ns);
      add_to(by_op[op.name], op);
      add_to(by_part[part_order(op.part)], op);
      add_to(by_op_in_part[{part_order(op.part), op.name}], op);
      by_part[part_order(op.part)].name = part_name(op.part);
      by_op_in_part[{part_order(op.part), op.name}].name = part_name(op.part) + ": " + op_name(op.name);
    }
    std::vector<double> task_ns(threads, 0.0);
    for (const WorkerSpan& s : step.spans) {
      if (s.worker < threads) task_ns[s.worker] += static_cast<double>(s.end_ns - s.begin_ns);
    }
    for (unsigned w = 0; w < threads; ++w) {
      thread_totals[w].task_ns += task_ns[w];
      thread_totals[w].idle_ns += std::max(0.0, step_ns - task_ns[w]);
    }
  }
  const double n = static_cast<double>(steps.size());
  out.step_ns /= n;
  out.op_ns /= n;
  out.parallel_ns /= n;
  for (auto& [id, t] : by_op) {
    t.name = op_name(id);
    scale_down(t, n);
    out.by_op.push_back(t);
  }
  std::sort(out.by_op.begin(), out.by_op.end(), [](const Totals& a, const Totals& b) { return a.ns > b.ns; });
  for (auto& [order, t] : by_part) {
    scale_down(t, n);
    out.by_part.push_back(t);
  }
  for (auto& [key, t] : by_op_in_part) {
    scale_down(t, n);
    out.by_op_in_part.push_back(t);
  }
  for (ThreadTotals& t : thread_totals) {
    t.task_ns /= n;
    t.idle_ns /= n;
  }
  out.threads = std::move(thread_totals);
  return out;
}

}  // namespace lumen::profile
