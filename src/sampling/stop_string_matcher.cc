#include "sampling/stop_string_matcher.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::sampling {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) {
    if (s.empty()) fail("stop strings must not be empty");
    longest_ = std::max(longest_, s.size());
  }
}

// The longest tail of held_ that some stop string begins with but is longer than.
size_t StopStringMatcher::tail_to_hold() const {
  const std::string_view held(held_);
  for (size_t k = std::min(held.size(), longest_ == 0 ? 0 : longest_ - 1); k > 0; --k) {
    const std::string_view tail = held.substr(held.size() - k);
    for (const std::string& s : stops_) {
      if (s.size() > k && std::string_view(s).starts_with(tail)) return k;
    }
  }
  return 0;
}

StopStringMatcher::Step StopStringMatcher::push(std::string_view piece) {
  Step step;
  if (stopped() || piece.empty()) return step;
  const size_t old_size = held_.size();
  held_.append(piece);
  // Any occurrence lies inside held_ (emitted text never starts one: it was not a prefix of a
  // stop string), and one ending in the old part would have been found already. So look at
  // each new end position in order; the first that completes a stop string decides.
  const std::string_view held(held_);
  for (size_t end = old_size + 1; end <= held.size(); ++end) {
    std::optional<size_t> best;  // the stop string starting first among those ending here
    for (size_t i = 0; i < stops_.size(); ++i) {
      const std::string& s = stops_[i];
      if (s.size() > end || held.substr(end - s.size(), s.size()) != s) continue;
      if (!best || s.size() > stops_[*best].size()) best = i;
    }
    if (best) {
      matched_ = best;
      step.text.assign(held.substr(0, end - stops_[*best].size()));
      step.stopped = true;
      held_.clear();
      return step;
    }
  }
  const size_t hold = tail_to_hold();
  step.text.assign(held.substr(0, held.size() - hold));
  held_.erase(0, held.size() - hold);
  return step;
}

std::string StopStringMatcher::flush() {
  std::string rest;
  rest.swap(held_);
  return rest;
}

}  // namespace lumen::sampling
