#pragma once
// Notices clients that hang up while their request is still generating, so the request is
// aborted and its KV blocks freed at once, not when the next write fails (a non-streamed
// request writes nothing until it is done; a queued one writes nothing for a while).
//
// One thread polls every watched socket a few times a second: a socket the peer closed (or
// reset) reads as end-of-file, and the watcher calls `on_disconnect` once for each of its
// request ids. A client that only half-closes its side after sending counts as gone.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace lumen::server {

class DisconnectWatcher {
 public:
  explicit DisconnectWatcher(std::function<void(uint64_t request_id)> on_disconnect);
  ~DisconnectWatcher();
  DisconnectWatcher(const DisconnectWatcher&) = delete;
  DisconnectWatcher& operator=(const DisconnectWatcher&) = delete;

  // Starts watching `socket` for `request_ids`; returns a ticket for unwatch(). The socket
  // must stay open until unwatch() returns (the HTTP thread that owns it calls both).
  uint64_t watch(int socket, std::vector<uint64_t> request_ids);
  void unwatch(uint64_t ticket);

 private:
  struct Entry {
    int socket;
    std::vector<uint64_t> request_ids;
    bool fired = false;
  };
  void run();

  std::function<void(uint64_t)> on_disconnect_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_ticket_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lumen::server
