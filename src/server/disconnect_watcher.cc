#include "server/disconnect_watcher.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

namespace lumen::server {

DisconnectWatcher::DisconnectWatcher(std::function<void(uint64_t)> on_disconnect)
    : on_disconnect_(std::move(on_disconnect)), thread_([this] { run(); }) {}

DisconnectWatcher::~DisconnectWatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t DisconnectWatcher::watch(int socket, std::vector<uint64_t> request_ids) {
  std::lock_guard lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  entries_.emplace(ticket, Entry{socket, std::move(request_ids)});
  return ticket;
}

void DisconnectWatcher::unwatch(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  entries_.erase(ticket);
}

namespace {

// Whether the peer has closed or reset the connection. Pending request bytes (a pipelined
// next request) mean it is still there.
bool peer_gone(int socket) {
  pollfd p{socket, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return true;
  char byte;
  const ssize_t got = recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0) return true;
  return got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace

void DisconnectWatcher::run() {
  constexpr auto kInterval = std::chrono::milliseconds(50);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    std::vector<uint64_t> gone;
    for (auto& [ticket, entry] : entries_) {
      if (entry.fired || !peer_gone(entry.socket)) continue;
      entry.fired = true;
      gone.insert(gone.end(), entry.request_ids.begin(), entry.request_ids.end());
    }
    // Aborting takes the engine's inbox lock only; never call out while holding ours.
    lock.unlock();
    for (uint64_t id : gone) on_disconnect_(id);
    lock.lock();
    wake_.wait_for(lock, kInterval, [this] { return stopping_; });
  }
}

int connection_socket(const httplib::Request& request) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    sockaddr_storage peer{}, local{};
    socklen_t peer_len = sizeof(peer), local_len = sizeof(local);
    const int s = static_cast<int>(fd);
    if (getpeername(s, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    if (getsockname(s, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    char peer_host[NI_MAXHOST], peer_port[NI_MAXSERV], local_port[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&peer), peer_len, peer_host, sizeof(peer_host), peer_port,
                    sizeof(peer_port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) continue;
    if (getnameinfo(reinterpret_cast<sockaddr*>(&local), local_len, nullptr, 0, local_port, sizeof(local_port),
                    NI_NUMERICSERV) != 0) continue;
    if (request.remote_addr == peer_host && std::to_string(request.remote_port) == peer_port &&
        std::to_string(request.local_port) == local_port) {
      found = s;
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace lumen::server
