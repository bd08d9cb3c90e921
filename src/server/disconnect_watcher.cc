#include "server/disconnect_watcher.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>

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

// Whether the peer has closed or reset the connection. POLLRDHUP says it sent its FIN even when
// bytes it sent before (a pipelined next request) are still unread, which a peek would see
// first and take for a live client.
bool peer_gone(int socket) {
  pollfd p{socket, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return true;
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

}  // namespace lumen::server
