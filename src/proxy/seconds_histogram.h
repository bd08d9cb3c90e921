#pragma once
// A Prometheus histogram of durations in seconds (text exposition format 0.0.4). Thread-safe.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace lumen::proxy {

class SecondsHistogram {
 public:
  explicit SecondsHistogram(std::vector<double> upper_bounds);
  void observe(double seconds);
  // Appends the # HELP and # TYPE lines, then `name`_bucket{le=...} (cumulative), _sum, _count.
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; the last one is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace lumen::proxy
