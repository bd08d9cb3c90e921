#pragma once
// Pipeline parallelism's micro-batches (model/pipeline_stage.h): one forward batch cut into
// parts of consecutive rows that go through the stages one after another. A part is a batch of
// its own whose rows count from its first: a sequence cut in two becomes two chunks, the second
// starting where the first ends, exactly as chunked prefill would have scheduled it (its
// attention reads the first part's K/V, which every stage wrote one part earlier). A sequence
// with an attention mask (a token tree) is never cut: its mask spans all its rows.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/forward_batch.h"

namespace lumen::model {

struct MicroBatch {
  int64_t first_row = 0;
  int64_t n_rows = 0;
  // Which of the whole batch's logit rows fall in this part (indices into logit_rows, ascending).
  std::vector<size_t> outputs;
};

// At most max_parts parts of at least min_rows rows each (one part when the batch is smaller),
// near-equal, covering the batch's rows in order. `n_groups`: the KV layout's layer groups
// (ForwardBatch::sequences holds n_groups slices per sequence).
std::vector<MicroBatch> plan_micro_batches(const ForwardBatch& batch, size_t n_groups, int max_parts, int64_t min_rows);

// A part's batch, with the storage its spans point into (the whole batch's spans too: it must
// outlive this).
struct MicroBatchInput {
  std::vector<backend::SequenceSlice> sequences;
  std::vector<int32_t> logit_rows;
  ForwardBatch batch;
};
void slice_micro_batch(const ForwardBatch& whole, size_t n_groups, const MicroBatch& part, MicroBatchInput& out);

}  // namespace lumen::model
