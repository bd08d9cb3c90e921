#include "engine/prefill_share.h"

#include <algorithm>
#include <numeric>

namespace lumen::engine {

std::vector<int64_t> share_prefill_budget(std::span<const int64_t> needs, int64_t budget) {
  std::vector<int64_t> grants(needs.size(), 0);
  if (needs.empty() || budget <= 0) return grants;
  // The first in rank order: its guaranteed half (rounded up, so a budget of 1 still moves it).
  grants[0] = std::min(needs[0], (budget + 1) / 2);
  int64_t left = budget - grants[0];
  std::vector<size_t> order(needs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return needs[a] - grants[a] < needs[b] - grants[b]; });
  for (size_t i : order) {
    if (left == 0) break;
    const int64_t more = std::min(needs[i] - grants[i], left);
    grants[i] += more;
    left -= more;
  }
  return grants;
}

}  // namespace lumen::engine
