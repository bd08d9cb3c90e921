#include "server/admission.h"

#include "server/api_error.h"

namespace lumen::server {

void Admission::reserve(int64_t n) {
  std::lock_guard lock(mutex_);
  if (draining_) {
    ApiError error(503, "the server is shutting down", "", "server_shutting_down");
    error.retry_after = 5;
    throw error;
  }
  if (in_flight_ + n > max_in_flight_) {
    ApiError error(429, fmt::format("the server's queue is full ({} requests in flight, at most {}); retry later",
                                    in_flight_, max_in_flight_),
                   "", "queue_full");
    error.retry_after = 1;
    throw error;
  }
  in_flight_ += n;
}

void Admission::release(int64_t n) {
  std::lock_guard lock(mutex_);
  in_flight_ -= n;
}

void Admission::track(uint64_t request_id) {
  std::lock_guard lock(mutex_);
  live_.insert(request_id);
}

void Admission::untrack(uint64_t request_id) {
  std::lock_guard lock(mutex_);
  live_.erase(request_id);
}

std::vector<uint64_t> Admission::tracked() const {
  std::lock_guard lock(mutex_);
  return {live_.begin(), live_.end()};
}

void Admission::begin_draining() {
  std::lock_guard lock(mutex_);
  draining_ = true;
}

bool Admission::draining() const {
  std::lock_guard lock(mutex_);
  return draining_;
}

int64_t Admission::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

}  // namespace lumen::server
