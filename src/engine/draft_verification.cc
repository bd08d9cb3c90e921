// OutputProcessor's side of speculative decoding: a verified draft's tokens are streamed like any
// other, the sequence keeps the accepted tokens' K/V (or ends), and the outcome is counted.
#include "engine/draft_verification.h"

#include <algorithm>
#include <vector>

#include "engine/output_processor.h"
#include "spec/token_tree.h"
#include "util/error.h"

namespace lumen::engine {

void OutputProcessor::verify_draft(Completion& c, std::span<const int32_t> draft, const RowSampler& sample_row,
                                   int64_t extra_rows) {
  const DraftOutcome outcome =
      verify_draft_rows(sample_row, draft, [&](const sampling::SampleResult& result) { return emit(c, result); });
  speculation.record(c.seq, static_cast<int64_t>(draft.size()), outcome.accepted, extra_rows);
  if (outcome.finish) {
    finish_completion(c, *outcome.finish);  // its blocks, rejected positions and all, go back
    return;
  }
  scheduler.accept_draft(&c.seq, outcome.accepted);
}

void OutputProcessor::verify_tree(Completion& c, std::span<const int32_t> draft, std::span<const int32_t> parents,
                                  const RowSampler& sample_row, int64_t extra_rows) {
  const TreeOutcome outcome = verify_tree_rows(sample_row, draft, parents,
                                               [&](const sampling::SampleResult& result) { return emit(c, result); });
  const auto accepted = static_cast<int64_t>(outcome.path.size());
  // The first branch is nodes 0, 1, ..: the accepted node at depth d is off it unless it is d - 1.
  int64_t off_first_branch = 0;
  for (int64_t d = 1; d <= accepted; ++d) off_first_branch += outcome.path[static_cast<size_t>(d - 1)] != d - 1;
  const std::vector<int32_t> depths = spec::node_depths(parents);
  const int32_t last = accepted == 0 ? -1 : outcome.path.back();
  const bool rejected_next = std::find(parents.begin(), parents.end(), last) != parents.end();
  speculation.record_tree(c.seq, std::ssize(draft), *std::max_element(depths.begin(), depths.end()), accepted,
                          off_first_branch, rejected_next, extra_rows);
  if (outcome.finish) {
    finish_completion(c, *outcome.finish);
    return;
  }
  // Node i's K/V sits at position n_computed + i (the last token's is n_computed - 1); the
  // accepted node at depth d belongs at n_computed + d - 1. Upward moves in order of depth never
  // overwrite a node still to move (node path[d - 1] >= d - 1, and later ones are deeper).
  const Sequence& seq = c.seq;
  const int64_t base = seq.n_computed;
  for (int64_t d = 1; d <= accepted; ++d) {
    const int64_t from = base + outcome.path[static_cast<size_t>(d - 1)];
    const int64_t to = base + d - 1;
    if (from == to) continue;
    if (kv_cache == nullptr) fail("token-tree verification without a KV cache to move the accepted branch in");
    const int64_t block_size = kv_cache->cache().block_size();
    // Each layer group (sliding-window layers keep their own) moves the row in its own blocks.
    for (size_t g = 0; g < kv_cache->cache().layout().n_groups(); ++g) {
      const std::span<const kv::BlockId> table = seq.blocks.table(g);
      kv_cache->copy_position(table[static_cast<size_t>(from / block_size)], from % block_size,
                              table[static_cast<size_t>(to / block_size)], to % block_size);
    }
  }
  scheduler.accept_draft(&c.seq, accepted);
}

}  // namespace lumen::engine
