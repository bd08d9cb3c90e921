#include "server/admission.h"

#include <algorithm>
#include <utility>

#include "server/api_error.h"

namespace lumen::server {

Admission::Places& Admission::Places::operator=(Places&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    client_ = std::move(other.client_);
    count_ = std::exchange(other.count_, 0);
  }
  return *this;
}

void Admission::Places::release() {
  if (owner_ != nullptr && count_ > 0) owner_->give_back(client_, count_);
  owner_ = nullptr;
  count_ = 0;
}

Admission::Admission(int64_t max_in_flight, int64_t max_per_client)
    : max_in_flight_(max_in_flight),
      max_per_client_(std::clamp<int64_t>(max_per_client > 0 ? max_per_client : max_in_flight / 2, 1,
                                          std::max<int64_t>(max_in_flight, 1))) {}

Admission::Places Admission::reserve(const std::string& client, int64_t n) {
  std::lock_guard lock(mutex_);
  if (draining_) {
    ApiError error(503, "the server is shutting down", "", "server_shutting_down");
    error.retry_after = 5;
    throw error;
  }
  auto it = held_.find(client);
  const int64_t held = it == held_.end() ? 0 : it->second;
  // The client's own limit first: when it is the one filling the queue, that is what it needs
  // to hear (other clients are still being served).
  if (held + n > max_per_client_) {
    ApiError error(429, fmt::format("this client has {} requests in flight (counted per choice) and one client may "
                                    "have at most {} (the per-client limit); retry when some have finished",
                                    held, max_per_client_),
                   "", "client_queue_full");
    error.retry_after = 1;
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
  held_[client] = held + n;
  return Places(this, client, n);
}

void Admission::give_back(const std::string& client, int64_t n) {
  std::lock_guard lock(mutex_);
  in_flight_ -= n;
  auto it = held_.find(client);
  if (it == held_.end()) return;  // cannot happen: only reserve() makes Places
  it->second -= n;
  if (it->second <= 0) held_.erase(it);
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

bool Admission::idle() const {
  std::lock_guard lock(mutex_);
  return in_flight_ == 0 && live_.empty();
}

int64_t Admission::held_by(const std::string& client) const {
  std::lock_guard lock(mutex_);
  auto it = held_.find(client);
  return it == held_.end() ? 0 : it->second;
}

}  // namespace lumen::server
