#pragma once
// The instances of one role (prefill or decode) and how requests are spread over them: to the one
// with the fewest requests in flight through this proxy, ties taken in turn (round-robin). Equal
// instances share the load evenly; a slow one, whose requests stay in flight longer, gets fewer.
// Thread-safe: every HTTP thread picks from the same pool.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "proxy/session_affinity.h"
#include "proxy/upstream_address.h"

namespace lumen::proxy {

class UpstreamPool {
 public:
  UpstreamPool(std::string role, std::vector<UpstreamAddress> addresses);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // One request's claim on an instance: counted in flight until the lease is destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    size_t index() const { return index_; }
    const UpstreamAddress& address() const;

   private:
    friend class UpstreamPool;
    Lease(UpstreamPool* pool, size_t index) : pool_(pool), index_(index) {}
    void release();

    UpstreamPool* pool_;
    size_t index_;
  };

  // The instance to send to next, leaving out the indices in `tried`; nothing when every one
  // has been tried. With a session key (session_affinity.h): the session's own instance unless
  // it is kAffinitySlack requests busier than the least busy one.
  std::optional<Lease> pick(const std::vector<size_t>& tried = {}, std::optional<uint64_t> session = std::nullopt);
  // The instance failed (unreachable, timed out, broke off, or answered a 5xx).
  void count_failure(size_t index);

  struct InstanceState {
    std::string url;
    int64_t in_flight = 0;
    uint64_t failures = 0;
  };
  std::vector<InstanceState> states() const;

  const std::string& role() const { return role_; }
  size_t size() const { return addresses_.size(); }
  const UpstreamAddress& address(size_t index) const { return addresses_.at(index); }

 private:
  const std::string role_;
  const std::vector<UpstreamAddress> addresses_;
  mutable std::mutex mutex_;
  std::vector<int64_t> in_flight_;
  std::vector<uint64_t> failures_;
  size_t next_ = 0;  // where the next scan starts, so ties rotate
  std::optional<size_t> least_busy(const std::vector<size_t>& tried);
  std::optional<size_t> session_choice(const std::vector<size_t>& tried, uint64_t session, int64_t least);
};

}  // namespace lumen::proxy
