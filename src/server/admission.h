#pragma once
// Which requests the server lets into the engine: at most a fixed number of places in flight
// (queued or running, one place per sequence), at most a share of them held by any one client,
// none once shutdown has begun. Also the set of engine request ids in flight, so a shutdown
// whose grace period runs out can abort them all.
//
// The per-client share is what keeps one client from taking every place: without it a single
// caller (a script in a loop, one request of 64 prompts x 16 choices) fills the queue and every
// other tenant gets 429 until it is done. A client is whatever the caller says it is (the API
// key's tenant, or the peer address; see client_id.h).
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace lumen::server {

class Admission {
 public:
  // Places held by one reservation; given back when destroyed (or by release()), so every path
  // out of a handler, exceptions included, returns them exactly once. Move-only.
  class Places {
   public:
    Places() = default;
    Places(Places&& other) noexcept { *this = std::move(other); }
    Places& operator=(Places&& other) noexcept;
    Places(const Places&) = delete;
    Places& operator=(const Places&) = delete;
    ~Places() { release(); }

    int64_t count() const { return count_; }
    // Whose places they are (client_id.h).
    const std::string& client() const { return client_; }
    // Gives the places back now; later calls (and the destructor) do nothing.
    void release();

   private:
    friend class Admission;
    Places(Admission* owner, std::string client, int64_t count)
        : owner_(owner), client_(std::move(client)), count_(count) {}
    Admission* owner_ = nullptr;
    std::string client_;
    int64_t count_ = 0;
  };

  // `max_per_client`: places one client may hold at once; 0 means half of `max_in_flight`
  // (at least 1). Clamped to `max_in_flight`.
  explicit Admission(int64_t max_in_flight, int64_t max_per_client = 0);

  // Takes `n` places for `client`. Throws ApiError 503 once draining, 429 when the client
  // already holds its share or the server's places are taken (both with Retry-After).
  [[nodiscard]] Places reserve(const std::string& client, int64_t n);

  void track(uint64_t request_id);
  void untrack(uint64_t request_id);
  std::vector<uint64_t> tracked() const;

  // From now on every reserve() fails with 503.
  void begin_draining();
  bool draining() const;
  int64_t in_flight() const;
  // No places held and no request tracked: nothing is running or still writing its response
  // (a Generation gives its places back when its choices finish, and untracks when destroyed).
  bool idle() const;
  int64_t held_by(const std::string& client) const;
  int64_t max_in_flight() const { return max_in_flight_; }
  int64_t max_per_client() const { return max_per_client_; }

 private:
  void give_back(const std::string& client, int64_t n);

  const int64_t max_in_flight_;
  const int64_t max_per_client_;
  mutable std::mutex mutex_;
  int64_t in_flight_ = 0;
  // Only clients holding places have an entry, so the map is as small as the work in flight
  // (the peer addresses of a flood do not pile up in it).
  std::unordered_map<std::string, int64_t> held_;
  bool draining_ = false;
  std::unordered_set<uint64_t> live_;
};

}  // namespace lumen::server
