#include "spec/acceptance_history.h"

#include <algorithm>

namespace lumen::spec {

bool AcceptanceHistory::ready() {
  if (pause_ == 0) return true;
  --pause_;
  return false;
}

void AcceptanceHistory::record(int64_t depth, int64_t accepted, bool rejected_next, int64_t rows, double min_rate,
                               double cost_per_row) {
  if (depth <= 0 && rows <= 0) return;
  const int64_t kept = std::clamp<int64_t>(accepted, 0, std::max<int64_t>(depth, 0));
  if (depth > 0) {
    accepted_ = kTokenForget * accepted_ + static_cast<double>(kept);
    examined_ = kTokenForget * examined_ + static_cast<double>(kept + (rejected_next && kept < depth ? 1 : 0));
    const double share = static_cast<double>(kept) / static_cast<double>(depth);
    rate_ = kWeight * share + (1.0 - kWeight) * rate_;
  }
  if (rows > 0) {
    const auto tokens = static_cast<double>(1 + kept);
    const auto added = static_cast<double>(rows);
    tokens_ = have_yield_ ? kWeight * tokens + (1.0 - kWeight) * tokens_ : tokens;
    rows_ = have_yield_ ? kWeight * added + (1.0 - kWeight) * rows_ : added;
    have_yield_ = true;
  }
  below_break_even_ = have_yield_ && cost_per_row > 0 && tokens_ < 1.0 + cost_per_row * rows_;
  if (rate_ >= min_rate && !below_break_even_) {
    next_pause_ = kFirstPause;
    return;
  }
  pause_ = next_pause_;
  next_pause_ = std::min(2 * next_pause_, kLongestPause);
}

}  // namespace lumen::spec
