#include "model/micro_batches.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::model {

namespace {

// The sequences of the batch: its first layer group's slices (every group has the same rows).
std::span<const backend::SequenceSlice> first_group(const ForwardBatch& batch, size_t n_groups) {
  if (n_groups == 0 || batch.sequences.size() % n_groups != 0) {
    fail("micro-batches: {} sequence slices for {} layer groups", batch.sequences.size(), n_groups);
  }
  return batch.sequences.first(batch.sequences.size() / n_groups);
}

}  // namespace

std::vector<MicroBatch> plan_micro_batches(const ForwardBatch& batch, size_t n_groups, int max_parts, int64_t min_rows) {
  const auto n = static_cast<int64_t>(batch.tokens.size());
  const std::span<const backend::SequenceSlice> seqs = first_group(batch, n_groups);
  const int64_t parts = std::clamp<int64_t>(n / std::max<int64_t>(min_rows, 1), 1, std::max(max_parts, 1));
  std::vector<int64_t> cuts = {0};
  for (int64_t i = 1; i < parts; ++i) {
    int64_t cut = n * i / parts;
    // Inside a masked sequence: cut after it instead.
    for (const backend::SequenceSlice& s : seqs) {
      if (backend::has_row_masks(s) && s.first_token < cut && cut < s.first_token + s.n_tokens)
        cut = s.first_token + s.n_tokens;
    }
    if (cut > cuts.back() && cut < n) cuts.push_back(cut);
  }
  cuts.push_back(n);
  std::vector<MicroBatch> out;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) out.push_back({cuts[i], cuts[i + 1] - cuts[i], {}});
  for (size_t j = 0; j < batch.logit_rows.size(); ++j) {
    const int32_t row = batch.logit_rows[j];
    const auto part = std::ranges::find_if(out, [&](const MicroBatch& p) { return row >= p.first_row && row < p.first_row + p.n_rows; });
    if (part == out.end()) fail("micro-batches: logit row {} outside a batch of {} rows", row, n);
    part->outputs.push_back(j);
  }
  return out;
}

void slice_micro_batch(const ForwardBatch& whole, size_t n_groups, const MicroBatch& part, MicroBatchInput& out) {
  const std::span<const backend::SequenceSlice> seqs = first_group(whole, n_groups);
  const int64_t begin = part.first_row, end = part.first_row + part.n_rows;
  if (begin < 0 || part.n_rows < 0 || end > std::ssize(whole.tokens)) {
    fail("micro-batches: rows {}..{} of a batch of {}", begin, end, whole.tokens.size());
  }
  out.sequences.clear();
  for (size_t g = 0; g < n_groups; ++g) {
    for (size_t i = 0; i < seqs.size(); ++i) {
      const backend::SequenceSlice& s = whole.sequences[g * seqs.size() + i];
      const int64_t from = std::max(s.first_token, begin), to = std::min(s.first_token + s.n_tokens, end);
      if (from >= to) continue;
      if (backend::has_row_masks(s) && (from != s.first_token || to != s.first_token + s.n_tokens)) {
        fail("micro-batches: a masked sequence of rows {}..{} cut at {}..{}", s.first_token, s.first_token + s.n_tokens,
             begin, end);
      }
      backend::SequenceSlice piece = s;
      piece.first_token = from - begin;
      piece.n_tokens = to - from;
      piece.start_pos = s.start_pos + (from - s.first_token);
      out.sequences.push_back(piece);
    }
  }
  out.logit_rows.clear();
  for (size_t j : part.outputs) out.logit_rows.push_back(static_cast<int32_t>(whole.logit_rows[j] - begin));
  const auto rows = [&](std::span<const int32_t> all) {
    return all.subspan(static_cast<size_t>(begin), static_cast<size_t>(part.n_rows));
  };
  out.batch = {rows(whole.tokens), rows(whole.positions), out.sequences, out.logit_rows};
}

}  // namespace lumen::model
