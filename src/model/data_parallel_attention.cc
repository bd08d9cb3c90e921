#include "model/data_parallel_attention.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::model {

int sequence_owner(std::span<const int32_t> block_table, int size) {
  if (size <= 1 || block_table.empty()) return 0;
  // A 64-bit mix (splitmix64's finalizer): consecutive block numbers, which the block manager
  // hands out to sequences admitted together, land on ranks independently of each other.
  uint64_t x = static_cast<uint64_t>(static_cast<uint32_t>(block_table[0])) + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<int>(x % static_cast<uint64_t>(size));
}

void select_rank_rows(const ForwardBatch& batch, size_t n_groups, int rank, int size, RankRows& out) {
  if (!batch.embeddings.empty() || !batch.scores.empty() || batch.states != nullptr) {
    fail("data-parallel attention: a step with given embeddings, attention scores or recurrent states");
  }
  if (n_groups == 0 || batch.sequences.size() % n_groups != 0) {
    fail("data-parallel attention: {} slices in {} layer groups", batch.sequences.size(), n_groups);
  }
  const size_t n_seqs = batch.sequences.size() / n_groups;
  out.tokens.clear();
  out.positions.clear();
  out.logit_rows.clear();
  out.sequences.clear();
  out.output_index.clear();
  // new_first[s]: where sequence s's rows start in this rank's batch (-1: another rank's).
  std::vector<int64_t> new_first(n_seqs, -1);
  for (size_t s = 0; s < n_seqs; ++s) {
    const backend::SequenceSlice& seq = batch.sequences[s];
    if (sequence_owner(seq.block_table, size) != rank) continue;
    new_first[s] = static_cast<int64_t>(out.tokens.size());
    const auto first = static_cast<size_t>(seq.first_token), count = static_cast<size_t>(seq.n_tokens);
    if (first + count > batch.tokens.size()) fail("data-parallel attention: a slice past the batch's rows");
    out.tokens.insert(out.tokens.end(), batch.tokens.begin() + first, batch.tokens.begin() + first + count);
    out.positions.insert(out.positions.end(), batch.positions.begin() + first, batch.positions.begin() + first + count);
  }
  for (size_t g = 0; g < n_groups; ++g) {
    for (size_t s = 0; s < n_seqs; ++s) {
      if (new_first[s] < 0) continue;
      backend::SequenceSlice slice = batch.sequences[g * n_seqs + s];
      slice.first_token = new_first[s];
      out.sequences.push_back(slice);
    }
  }
  // Logit rows in output order; a row belongs to the sequence whose slice holds it.
  for (size_t i = 0; i < batch.logit_rows.size(); ++i) {
    const int32_t row = batch.logit_rows[i];
    for (size_t s = 0; s < n_seqs; ++s) {
      const backend::SequenceSlice& seq = batch.sequences[s];
      if (row < seq.first_token || row >= seq.first_token + seq.n_tokens) continue;
      if (new_first[s] >= 0) {
        out.logit_rows.push_back(static_cast<int32_t>(new_first[s] + (row - seq.first_token)));
        out.output_index.push_back(static_cast<int32_t>(i));
      }
      break;
    }
  }
}

}  // namespace lumen::model
