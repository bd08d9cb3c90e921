#include "spec/acceptance_history.h"

#include <algorithm>

namespace lumen::spec {

bool AcceptanceHistory::ready() {
  if (pause_ == 0) return true;
  --pause_;
  return false;
}

void AcceptanceHistory::record(int64_t depth, int64_t accepted, bool rejected_next, double min_rate) {
  if (depth <= 0) return;
  const int64_t kept = std::clamp<int64_t>(accepted, 0, depth);
  accepted_ = kTokenForget * accepted_ + static_cast<double>(kept);
  examined_ = kTokenForget * examined_ + static_cast<double>(kept + (rejected_next && kept < depth ? 1 : 0));
  const double share = static_cast<double>(kept) / static_cast<double>(depth);
  rate_ = kWeight * share + (1.0 - kWeight) * rate_;
  if (rate_ >= min_rate) {
    next_pause_ = kFirstPause;
    return;
  }
  pause_ = next_pause_;
  next_pause_ = std::min(2 * next_pause_, kLongestPause);
}

}  // namespace lumen::spec
