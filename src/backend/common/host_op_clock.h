#pragma once
// Op times on the host's clock (Backend::time_ops) for a backend whose ops are done when they
// return (the CPU): a mark is the steady clock's reading, so the time between an op's two marks
// is the op's.
#include <chrono>
#include <cstdint>
#include <vector>

namespace lumen::backend::common {

class HostOpClock {
 public:
  void enable(bool on) {
    enabled_ = on;
    marks_.clear();
  }
  void mark() {
    if (enabled_) marks_.push_back(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  // Nanoseconds after the first mark, for every mark since the last take.
  std::vector<double> take() {
    std::vector<double> out;
    out.reserve(marks_.size());
    for (const int64_t m : marks_) out.push_back(static_cast<double>(m - marks_.front()) * kNsPerTick);
    marks_.clear();
    return out;
  }

 private:
  static constexpr double kNsPerTick =
      1e9 * std::chrono::steady_clock::period::num / std::chrono::steady_clock::period::den;
  bool enabled_ = false;
  std::vector<int64_t> marks_;
};

}  // namespace lumen::backend::common
