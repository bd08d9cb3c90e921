#pragma once
// Data-parallel attention beside expert parallelism (--data-parallel-attention): each rank runs
// the embedding, attention, norms, dense FFNs and output head for its own sequences' rows only,
// and holds only their keys and values; the MoE layers exchange rows all-to-all between ranks
// (ExpertParallelFfn::forward_own_rows). Rank 0's scheduler still plans every step, and every
// rank receives the same step, so each works out every rank's share from it alone.
//
// Which rank a sequence belongs to: a hash of the first block of its (first layer group's) block
// table. That block is the sequence's for its whole life, the same number on every rank, and
// sequences that share it (a prefix-cache hit, n > 1 forks) share the blocks written on that one
// rank, so the keys they read are always where they run. Balanced by count in expectation (the
// hash spreads block numbers evenly), not step by step.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend_types.h"
#include "model/forward_batch.h"

namespace lumen::model {

// The rank of `size` that runs the sequence whose block table this is.
int sequence_owner(std::span<const int32_t> block_table, int size);

// One rank's part of a step: its sequences' rows as a batch of its own (slices rebased onto the
// rows kept, every layer group's slice of a kept sequence kept), and where its logit rows go.
struct RankRows {
  std::vector<int32_t> tokens, positions, logit_rows;
  std::vector<backend::SequenceSlice> sequences;
  // For each of this rank's logit rows (in its order): its index in the step's logit output.
  std::vector<int32_t> output_index;

  ForwardBatch batch() const { return {tokens, positions, sequences, logit_rows}; }
};

// `rank`'s rows of `batch`, whose slices are n_groups groups of the same sequences. Throws
// lumen::Error for what the split does not carry (given embeddings, attention scores, states).
void select_rank_rows(const ForwardBatch& batch, size_t n_groups, int rank, int size, RankRows& out);

}  // namespace lumen::model
