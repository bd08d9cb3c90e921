#pragma once
// What the profiler records while a forward pass runs: each backend op's time window with its
// cost (op_cost.h) and the part of the model it belongs to, and each worker thread's task spans
// (util/thread_pool.h's WorkerSpanObserver). All times are steady_clock nanoseconds.
#include <cstdint>
#include <string>
#include <vector>

#include "profile/op_cost.h"

namespace lumen::profile {

// Where in the model an op runs: a decoder layer (0, 1, ...) or one of these.
constexpr int kEmbedding = -1;  // the token embedding lookup, before the first layer
constexpr int kHead = -2;       // the final norm and the output projection (logits)
constexpr int kUnknownPart = -3;

struct OpRecord {
  uint32_t name = 0;  // index into the recorder's op names: "matmul attn_q+attn_k+attn_v", "attention"
  int part = kUnknownPart;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  OpCost cost;
};

struct WorkerSpan {
  unsigned worker = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  int64_t tasks = 0;
};

// One forward pass as recorded.
struct StepRecording {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  std::vector<OpRecord> ops;
  std::vector<WorkerSpan> spans;  // every worker's, sorted by begin
};

// "layer 3", "embedding", "head".
std::string part_name(int part);

}  // namespace lumen::profile
