#include "proxy/upstream_pool.h"

#include <algorithm>
#include <utility>

namespace lumen::proxy {

UpstreamPool::UpstreamPool(std::string role, std::vector<UpstreamAddress> addresses)
    : role_(std::move(role)),
      addresses_(std::move(addresses)),
      in_flight_(addresses_.size(), 0),
      failures_(addresses_.size(), 0) {}

UpstreamPool::Lease::Lease(Lease&& other) noexcept : pool_(std::exchange(other.pool_, nullptr)), index_(other.index_) {}

UpstreamPool::Lease& UpstreamPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::exchange(other.pool_, nullptr);
    index_ = other.index_;
  }
  return *this;
}

UpstreamPool::Lease::~Lease() { release(); }

const UpstreamAddress& UpstreamPool::Lease::address() const { return pool_->address(index_); }

void UpstreamPool::Lease::release() {
  if (pool_ == nullptr) return;
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  pool_->in_flight_[index_] -= 1;
  pool_ = nullptr;
}

std::optional<size_t> UpstreamPool::least_busy(const std::vector<size_t>& tried) {
  const size_t count = addresses_.size();
  std::optional<size_t> best;
  // Scanning from where the last pick left off makes the first of several equally loaded
  // instances a different one each time.
  for (size_t step = 0; step < count; ++step) {
    const size_t index = (next_ + step) % count;
    if (std::find(tried.begin(), tried.end(), index) != tried.end()) continue;
    if (!best || in_flight_[index] < in_flight_[*best]) best = index;
  }
  return best;
}

std::optional<size_t> UpstreamPool::session_choice(const std::vector<size_t>& tried, uint64_t session,
                                                   int64_t least) {
  std::vector<size_t> order;
  for (size_t index = 0; index < addresses_.size(); ++index) {
    if (std::find(tried.begin(), tried.end(), index) == tried.end()) order.push_back(index);
  }
  std::sort(order.begin(), order.end(), [session](size_t a, size_t b) {
    return rendezvous_weight(session, a) > rendezvous_weight(session, b);
  });
  for (const size_t index : order) {
    if (in_flight_[index] <= least + kAffinitySlack) return index;
  }
  return std::nullopt;
}

std::optional<UpstreamPool::Lease> UpstreamPool::pick(const std::vector<size_t>& tried,
                                                      std::optional<uint64_t> session) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<size_t> chosen = least_busy(tried);
  if (!chosen) return std::nullopt;
  if (session) {
    chosen = session_choice(tried, *session, in_flight_[*chosen]);
  } else {
    next_ = (*chosen + 1) % addresses_.size();
  }
  in_flight_[*chosen] += 1;
  return Lease(this, *chosen);
}

void UpstreamPool::count_failure(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_.at(index) += 1;
}

std::vector<UpstreamPool::InstanceState> UpstreamPool::states() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<InstanceState> states;
  for (size_t i = 0; i < addresses_.size(); ++i) states.push_back({addresses_[i].url(), in_flight_[i], failures_[i]});
  return states;
}

}  // namespace lumen::proxy
