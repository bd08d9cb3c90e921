#pragma once
// Context parallelism (issue 53): the prefill of one long prompt split across N processes, each
// computing its own rows' Q, K and V and attending them over every rank's keys as the K/V blocks
// pass around the ring (model/transformer_context.cc).
//
// Causal attention makes a later row cost more than an earlier one (it sees more keys), so
// cutting the prompt into N consecutive pieces would leave the last rank with most of the work.
// Each rank instead takes two of 2N equal chunks, mirrored: rank r holds chunks r and 2N-1-r, so
// every rank's pair sums to the same attention work (the balanced split of ring attention's
// "striped"/"zig-zag" variants).
#include <cstdint>

namespace lumen::dist {
class Collectives;
}

namespace lumen::model {

// This process's place among the ranks that share a prompt's prefill.
struct ContextShare {
  int rank = 0;
  int size = 1;                       // 1: no context parallelism
  dist::Collectives* comm = nullptr;  // required when size > 1 (outlives the model)
};

// Rows [first, first + count) of a prompt.
struct RowRange {
  int64_t first = 0;
  int64_t count = 0;
};

// One rank's two chunks, the earlier first (their rows ascend: early ends before late starts).
struct ContextChunks {
  RowRange early;
  RowRange late;
  int64_t rows() const { return early.count + late.count; }
};

// Chunk i of 2 * size covers rows [i * n / (2 * size), (i + 1) * n / (2 * size)): sizes differ by
// at most one row. Throws lumen::Error unless 0 <= rank < size and n_rows >= 2 * size (every
// chunk has a row).
ContextChunks context_chunks(int64_t n_rows, int rank, int size);

// Which rank holds row `row` of n_rows (the inverse of context_chunks).
int context_rank_of_row(int64_t row, int64_t n_rows, int size);

}  // namespace lumen::model
