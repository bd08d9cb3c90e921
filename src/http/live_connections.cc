#include "http/live_connections.h"

#include <sys/socket.h>

namespace lumen::http {

void LiveConnections::add(int socket) {
  std::lock_guard lock(mutex_);
  sockets_.insert(socket);
}

void LiveConnections::remove(int socket) {
  std::lock_guard lock(mutex_);
  sockets_.erase(socket);
}

void LiveConnections::shutdown_all() {
  std::lock_guard lock(mutex_);
  for (int socket : sockets_) ::shutdown(socket, SHUT_RDWR);
}

size_t LiveConnections::size() const {
  std::lock_guard lock(mutex_);
  return sockets_.size();
}

}  // namespace lumen::http
