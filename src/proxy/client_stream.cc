#include "proxy/client_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace lumen::proxy {

namespace {

// poll() on one descriptor, retried on EINTR. Returns its revents, 0 on timeout, -1 on failure.
int poll_one(int socket, short events, int timeout_ms) {
  pollfd entry{socket, events, 0};
  for (;;) {
    const int ready = ::poll(&entry, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ready;
    return entry.revents;
  }
}

void address_and_port(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

}  // namespace

bool ClientStream::wait_for_request(std::chrono::milliseconds idle, const std::function<bool()>& stop) {
  if (begin_ < end_) return true;  // a pipelined request is already here
  const Clock::time_point until = Clock::now() + idle;
  while (!stop()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    const int slice = static_cast<int>(std::min<int64_t>(left.count(), 100));
    const int events = poll_one(socket_, POLLIN, slice);
    if (events < 0) return false;
    // Readable with nothing to read is the client's close; httplib sees it as the end.
    if (events != 0) return true;
  }
  return false;
}

void ClientStream::begin_request(Clock::time_point deadline, size_t budget) {
  deadline_ = deadline;
  budget_ = budget;
  consumed_ = 0;
  timed_out_ = false;
  over_budget_ = false;
}

int ClientStream::milliseconds_left() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

bool ClientStream::is_readable() const {
  if (begin_ < end_) return true;
  const int events = poll_one(socket_, POLLIN, milliseconds_left());
  return events > 0;
}

bool ClientStream::is_writable() const { return poll_one(socket_, POLLOUT, 0) > 0; }

bool ClientStream::fill() {
  for (;;) {
    const int left = milliseconds_left();
    if (left == 0) {
      timed_out_ = true;
      return false;
    }
    const int events = poll_one(socket_, POLLIN, left);
    if (events < 0) return false;
    if (events == 0) continue;  // the deadline passed; the next turn says so
    const ssize_t got = ::recv(socket_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (got > 0) {
      begin_ = 0;
      end_ = static_cast<size_t>(got);
      return true;
    }
    if (got == 0) return false;
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return false;
  }
}

ssize_t ClientStream::read(char* ptr, size_t size) {
  if (consumed_ >= budget_) {
    over_budget_ = true;
    return -1;
  }
  if (begin_ == end_ && !fill()) return timed_out_ ? -1 : 0;
  const size_t count = std::min({size, end_ - begin_, budget_ - consumed_});
  std::memcpy(ptr, buffer_.data() + begin_, count);
  begin_ += count;
  consumed_ += count;
  return static_cast<ssize_t>(count);
}

ssize_t ClientStream::write(const char* ptr, size_t size) {
  const int timeout_ms = static_cast<int>(std::min<int64_t>(write_timeout_.count(), INT_MAX));
  for (;;) {
    const int events = poll_one(socket_, POLLOUT, timeout_ms);
    if (events <= 0 || (events & (POLLERR | POLLHUP | POLLNVAL)) != 0) return -1;
    // MSG_NOSIGNAL: a client gone mid-write is an error to return, not a SIGPIPE.
    const ssize_t sent = ::send(socket_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) return sent;
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
  }
}

void ClientStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(socket_, reinterpret_cast<sockaddr*>(&address), &length) == 0) address_and_port(address, ip, port);
}

void ClientStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(socket_, reinterpret_cast<sockaddr*>(&address), &length) == 0) address_and_port(address, ip, port);
}

bool peer_hung_up(int socket) {
  const int events = poll_one(socket, static_cast<short>(POLLIN | POLLRDHUP), 0);
  if (events <= 0) return false;
  if ((events & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) != 0) return true;
  char byte = 0;
  // Readable: either the next request's bytes (still there) or the end of the stream.
  return ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace lumen::proxy
