#pragma once
// The sockets of every connection being served, so that the end of a drain can shut them all
// down: a handler blocked writing to a client that stopped reading, or a client still sending,
// then returns at once instead of holding the process.
#include <mutex>
#include <set>

namespace lumen::http {

class LiveConnections {
 public:
  void add(int socket);
  // Before the socket is closed, so that shutdown_all() never reaches a reused descriptor.
  void remove(int socket);
  // Shuts every registered connection down in both directions.
  void shutdown_all();
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::set<int> sockets_;
};

}  // namespace lumen::http
