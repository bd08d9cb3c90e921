#include "kv_transfer/peer_limit.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>

#include "kv_transfer/zmq_io.h"

namespace lumen::kv_transfer {
namespace {

int local_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return -1;
}

int port_of(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (!endpoint.starts_with("tcp://") || colon == std::string::npos) return -1;
  return std::atoi(endpoint.c_str() + colon + 1);
}

std::string monitor_endpoint() {
  static std::atomic<unsigned> next{0};
  return "inproc://lumen-kv-transfer-monitor-" + std::to_string(next.fetch_add(1));
}

}  // namespace

PeerLimit::PeerLimit(zmq::socket_t& router, size_t max_peers)
    : max_peers_(max_peers),
      port_(port_of(router.get(zmq::sockopt::last_endpoint))),
      monitor_(zmq_context(), zmq::socket_type::pair) {
  const std::string endpoint = monitor_endpoint();
  if (zmq_socket_monitor(router.handle(), endpoint.c_str(),
                         ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CLOSED) != 0) {
    throw zmq::error_t();
  }
  monitor_.set(zmq::sockopt::linger, 0);
  // No high-water mark: libzmq's I/O thread blocks on a full monitor queue (see stop()), so the
  // queue takes every event until this server's thread reads it (within its poll interval).
  monitor_.set(zmq::sockopt::rcvhwm, 0);
  monitor_.connect(endpoint);
}

void PeerLimit::stop(zmq::socket_t& router) {
  zmq_socket_monitor(router.handle(), nullptr, 0);
  handle_events();
}

void PeerLimit::handle_events() {
  for (;;) {
    // An event is two frames: 6 bytes (u16 event, u32 value: the fd) and the endpoint.
    std::vector<zmq::message_t> event = receive_message(monitor_);
    if (event.empty()) return;
    if (event[0].size() < 6) continue;
    uint16_t id;
    uint32_t value;
    std::memcpy(&id, event[0].data(), sizeof(id));
    std::memcpy(&value, event[0].data<uint8_t>() + 2, sizeof(value));
    const int fd = static_cast<int>(value);
    if (id == ZMQ_EVENT_ACCEPTED) {
      accepted(fd);
    } else {
      open_.erase(fd);
    }
  }
}

void PeerLimit::accepted(int fd) {
  if (open_.size() >= max_peers_) {
    // A monitor drops events when its queue is full (a flood of connections): forget the
    // connections that are no longer this server's, so lost events never fill the cap.
    std::erase_if(open_, [this](int open) { return local_port(open) != port_; });
  }
  if (open_.size() < max_peers_) {
    open_.insert(fd);
    return;
  }
  // libzmq may have closed this connection already and the number been reused; shut it down
  // only while it is still a connection to this server's port (then it is one past the cap).
  if (port_ > 0 && local_port(fd) == port_) shutdown(fd, SHUT_RDWR);
}

}  // namespace lumen::kv_transfer
