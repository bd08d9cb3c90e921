#include "spec/ngram_proposer.h"

#include <algorithm>

namespace lumen::spec {

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
  if (best_end < 0) return;
  const int64_t stop = std::min<int64_t>(len, best_end + max_tokens);
  out.assign(tokens.begin() + best_end, tokens.begin() + stop);
}

void NgramProposer::propose(std::span<const DraftRequest> requests) {
  for (const DraftRequest& r : requests) ngram_lookup(r.tokens, min_n_, max_n_, r.max_tokens, *r.draft);
}

}  // namespace lumen::spec
