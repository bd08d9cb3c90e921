#include "server/disconnect_watcher.h"

#include <chrono>

#include "http/peer_hang_up.h"

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

void DisconnectWatcher::run() {
  constexpr auto kInterval = std::chrono::milliseconds(50);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    std::vector<uint64_t> gone;
    for (auto& [ticket, entry] : entries_) {
      if (entry.fired || !http::peer_hung_up(entry.socket)) continue;
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
