// Summing recorded steps: hand-made recordings with known times.
#include "profile/step_breakdown.h"

#include <gtest/gtest.h>

#include "profile/chrome_trace.h"

namespace lumen::profile {
namespace {

TEST(StepBreakdown, CoveredTimeCountsOverlapsOnce) {
  const WorkerSpan spans[] = {{0, 0, 10, 1}, {1, 5, 12, 1}, {0, 20, 30, 1}, {1, 22, 25, 1}};
  EXPECT_DOUBLE_EQ(covered_ns(spans), 12.0 + 10.0);
  EXPECT_DOUBLE_EQ(covered_ns({}), 0.0);
}

// Two steps of 100 and 200 ns: a norm of layer 0, a matmul of layer 0, a matmul of the head.
std::vector<StepRecording> two_steps() {
  std::vector<StepRecording> steps(2);
  for (int i = 0; i < 2; ++i) {
    const int64_t t0 = 1000 * i, k = i + 1;  // the second step takes twice as long
    StepRecording& s = steps[static_cast<size_t>(i)];
    s.begin_ns = t0;
    s.end_ns = t0 + 100 * k;
    s.ops = {{0, 0, t0, t0 + 10 * k, {100, 40, false}},
             {1, 0, t0 + 10 * k, t0 + 60 * k, {1000, 2000, true}},
             {1, kHead, t0 + 60 * k, t0 + 90 * k, {500, 1000, true}}};
    s.spans = {{0, t0 + 10 * k, t0 + 60 * k, 3}, {1, t0 + 12 * k, t0 + 58 * k, 2}, {0, t0 + 60 * k, t0 + 90 * k, 1}};
  }
  return steps;
}

std::string names(uint32_t id) { return id == 0 ? "rms_norm" : "matmul w"; }

TEST(StepBreakdown, AveragesOpsPartsAndThreadsOverSteps) {
  const std::vector<StepRecording> steps = two_steps();
  const StepBreakdown b = break_down(steps, names, 3);
  EXPECT_EQ(b.repetitions, 2);
  EXPECT_DOUBLE_EQ(b.step_ns, 150.0);
  EXPECT_DOUBLE_EQ(b.op_ns, 135.0);      // (90 + 180) / 2
  EXPECT_DOUBLE_EQ(b.parallel_ns, 120.0);  // (80 + 160) / 2
  ASSERT_EQ(b.by_op.size(), 2u);
  EXPECT_EQ(b.by_op[0].name, "matmul w");  // most time first
  EXPECT_EQ(b.by_op[0].calls, 2);
  EXPECT_DOUBLE_EQ(b.by_op[0].ns, 120.0);  // (50 + 30) * 1.5
  EXPECT_DOUBLE_EQ(b.by_op[0].cost.bytes, 1500.0);
  EXPECT_TRUE(b.by_op[0].cost.int8);
  ASSERT_EQ(b.by_part.size(), 2u);
  EXPECT_EQ(b.by_part[0].name, "layer 0");
  EXPECT_DOUBLE_EQ(b.by_part[0].ns, 90.0);
  EXPECT_EQ(b.by_part[1].name, "head");
  ASSERT_EQ(b.by_op_in_part.size(), 3u);
  EXPECT_EQ(b.by_op_in_part[0].name, "layer 0: rms_norm");
  EXPECT_EQ(b.by_op_in_part[2].name, "head: matmul w");
  // Worker 0: 80 and 160 ns of tasks; worker 1: 46 and 92; worker 2 never ran.
  ASSERT_EQ(b.threads.size(), 3u);
  EXPECT_DOUBLE_EQ(b.threads[0].task_ns, 120.0);
  EXPECT_DOUBLE_EQ(b.threads[0].idle_ns, 30.0);
  EXPECT_DOUBLE_EQ(b.threads[1].task_ns, 69.0);
  EXPECT_DOUBLE_EQ(b.threads[2].task_ns, 0.0);
  EXPECT_DOUBLE_EQ(b.threads[2].idle_ns, 150.0);
}

TEST(ChromeTrace, OneTrackOfOpsAndOneOfSpansPerWorker) {
  const std::vector<StepRecording> steps = two_steps();
  const nlohmann::json events = chrome_trace_events(steps[1], names, "decode", 7);
  int ops = 0, worker_spans = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e["pid"], 7);
    if (e["ph"] != "X") continue;
    if (e["tid"] == 0) {
      ++ops;
    } else {
      ++worker_spans;
      // Each span is named after the op it ran inside: the matmuls.
      EXPECT_EQ(e["name"], "matmul w");
    }
  }
  EXPECT_EQ(ops, 3);
  EXPECT_EQ(worker_spans, 3);
  // Times in microseconds from the step's start.
  EXPECT_DOUBLE_EQ(events[2]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(events[2]["dur"].get<double>(), 0.02);
  const nlohmann::json doc = chrome_trace_document(events);
  EXPECT_EQ(doc["traceEvents"].size(), events.size());
}

}  // namespace
}  // namespace lumen::profile
