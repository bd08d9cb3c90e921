#include "util/range_split.h"

#include <algorithm>

#include "util/error.h"

namespace lumen {

void RangeSplit::reset(int64_t n_units, int parts) {
  if (n_units < 0 || n_units >= kMaxUnits || parts < 1) {
    fail("range split: {} units in {} parts", n_units, parts);
  }
  if (parts > capacity_) {
    ranges_ = std::make_unique<Range[]>(static_cast<size_t>(parts));
    capacity_ = parts;
  }
  parts_ = parts;
  for (int p = 0; p < parts; ++p) {
    ranges_[p].bounds.store(pack(n_units * p / parts, n_units * (p + 1) / parts), std::memory_order_relaxed);
  }
}

bool RangeSplit::take(int part, int64_t step, bool from_back, int64_t& begin, int64_t& end) {
  std::atomic<uint64_t>& bounds = ranges_[part].bounds;
  uint64_t b = bounds.load(std::memory_order_relaxed);
  for (;;) {
    const auto front = static_cast<int64_t>(b & 0xffffffffu), back = static_cast<int64_t>(b >> 32);
    if (front >= back) return false;
    const int64_t taken = std::min(step, back - front);
    begin = from_back ? back - taken : front;
    end = begin + taken;
    const uint64_t left = from_back ? pack(front, begin) : pack(end, back);
    if (bounds.compare_exchange_weak(b, left, std::memory_order_relaxed)) return true;
  }
}

int RangeSplit::fullest() const {
  int best = -1;
  int64_t most = 0;
  for (int p = 0; p < parts_; ++p) {
    const uint64_t b = ranges_[p].bounds.load(std::memory_order_relaxed);
    const int64_t left = static_cast<int64_t>(b >> 32) - static_cast<int64_t>(b & 0xffffffffu);
    if (left > most) {
      most = left;
      best = p;
    }
  }
  return best;
}

}  // namespace lumen
