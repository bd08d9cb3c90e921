#pragma once
// Which requests the server lets into the engine: at most a fixed number in flight (queued or
// running, counted per choice), none once shutdown has begun. Also the set of engine request
// ids in flight, so a shutdown whose grace period runs out can abort them all.
#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace lumen::server {

class Admission {
 public:
  explicit Admission(int64_t max_in_flight) : max_in_flight_(max_in_flight) {}

  // Takes `n` places. Throws ApiError 503 once draining, 429 when the places are taken (both
  // with Retry-After).
  void reserve(int64_t n);
  void release(int64_t n);

  void track(uint64_t request_id);
  void untrack(uint64_t request_id);
  std::vector<uint64_t> tracked() const;

  // From now on every reserve() fails with 503.
  void begin_draining();
  bool draining() const;
  int64_t in_flight() const;

 private:
  const int64_t max_in_flight_;
  mutable std::mutex mutex_;
  int64_t in_flight_ = 0;
  bool draining_ = false;
  std::unordered_set<uint64_t> live_;
};

}  // namespace lumen::server
