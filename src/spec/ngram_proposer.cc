#include "spec/ngram_proposer.h"

#include <algorithm>

#include "spec/token_tree.h"

namespace lumen::spec {

namespace {

// Up to `max_tokens` tokens that followed the occurrence ending at `end`, into `out`. Where that
// continuation reaches the end of the sequence it goes on as the copy it is (an overlapping
// copy, as in LZ77): the text from `end` on repeats with period len - end, so a sequence
// caught in a loop ("::arch::arch...") gets a whole draft rather than the few tokens before
// the end.
void continuation(std::span<const int32_t> tokens, int64_t end, int64_t max_tokens, std::vector<int32_t>& out) {
  const auto period = static_cast<int64_t>(tokens.size()) - end;
  out.clear();
  for (int64_t i = 0; i < max_tokens; ++i) {
    out.push_back(i < period ? tokens[static_cast<size_t>(end + i)] : out[static_cast<size_t>(i - period)]);
  }
}

}  // namespace

void ngram_lookup(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t max_tokens,
                  std::vector<int32_t>& out) {
  out.clear();
  const auto len = static_cast<int64_t>(tokens.size());
  if (max_tokens <= 0 || min_n <= 0 || len < static_cast<int64_t>(min_n) + 1) return;
  // One pass from the most recent candidate back: an occurrence ending at `end` (exclusive)
  // matches the suffix over `m` tokens when tokens[end - m, end) == tokens[len - m, len). The
  // last candidate ends at len - 1, so at least one token follows every match. A longer match
  // replaces the best so far only when strictly longer, so ties keep the most recent.
  int64_t best_end = -1;
  int64_t best_len = min_n - 1;
  for (int64_t end = len - 1; end >= min_n; --end) {
    int64_t m = 0;
    const int64_t limit = std::min<int64_t>(max_n, end);
    while (m < limit && tokens[static_cast<size_t>(end - 1 - m)] == tokens[static_cast<size_t>(len - 1 - m)]) ++m;
    if (m > best_len) {
      best_len = m;
      best_end = end;
      if (m == max_n) break;  // nothing earlier can be longer, and ties go to the most recent
    }
  }
  if (best_end >= 0) continuation(tokens, best_end, max_tokens, out);
}

void ngram_tree(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t max_tokens,
                int32_t max_candidates, std::vector<int32_t>& out_tokens, std::vector<int32_t>& out_parents) {
  out_tokens.clear();
  out_parents.clear();
  const auto len = static_cast<int64_t>(tokens.size());
  if (max_tokens <= 0 || min_n <= 0 || len < static_cast<int64_t>(min_n) + 1) return;
  // Every occurrence that matches at least min_n tokens, most recent first; a bounded number, so
  // a long repetitive sequence costs no more than a few candidates' worth.
  constexpr size_t kMaxMatches = 64;
  std::vector<std::pair<int64_t, int64_t>> matches;  // (end, length)
  for (int64_t end = len - 1; end >= min_n && matches.size() < kMaxMatches; --end) {
    int64_t m = 0;
    const int64_t limit = std::min<int64_t>(max_n, end);
    while (m < limit && tokens[static_cast<size_t>(end - 1 - m)] == tokens[static_cast<size_t>(len - 1 - m)]) ++m;
    if (m >= min_n) matches.emplace_back(end, m);
  }
  std::stable_sort(matches.begin(), matches.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  const int64_t max_nodes = static_cast<int64_t>(max_tokens) * max_candidates;
  int32_t added = 0;
  std::vector<int32_t> branch;
  for (const auto& [end, m] : matches) {
    if (added == max_candidates) break;
    continuation(tokens, end, max_tokens, branch);
    if (add_branch(out_tokens, out_parents, branch, max_nodes) > 0) ++added;
  }
}

void NgramProposer::propose(std::span<const DraftRequest> requests) {
  for (const DraftRequest& r : requests) {
    if (r.draft_parents != nullptr && r.max_candidates > 1) {
      ngram_tree(r.tokens, min_n_, max_n_, r.max_tokens, r.max_candidates, *r.draft, *r.draft_parents);
    } else {
      ngram_lookup(r.tokens, min_n_, max_n_, r.max_tokens, *r.draft);
    }
  }
}

}  // namespace lumen::spec
