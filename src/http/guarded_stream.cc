#include "http/guarded_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace lumen::http {

namespace {

constexpr size_t kBufferBytes = 64 * 1024;

int milliseconds_until(std::chrono::steady_clock::time_point until) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

void address_of(int socket, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int got = peer ? getpeername(socket, reinterpret_cast<sockaddr*>(&address), &length)
                       : getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length);
  char host[NI_MAXHOST], service[NI_MAXSERV];
  if (got != 0 || getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof(host), service,
                              sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    ip.clear();
    port = 0;
    return;
  }
  ip = host;
  port = std::atoi(service);
}

}  // namespace

GuardedStream::GuardedStream(int socket, std::chrono::milliseconds write_timeout)
    : socket_(socket), write_timeout_(write_timeout), buffer_(kBufferBytes) {}

bool GuardedStream::wait_readable(Clock::time_point until) const {
  for (;;) {
    pollfd p{socket_, POLLIN, 0};
    const int ready = poll(&p, 1, milliseconds_until(until));
    if (ready > 0) return true;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && Clock::now() < until) continue;  // a wait longer than poll's slice
    return false;
  }
}

ssize_t GuardedStream::fill() {
  if (begin_ == end_) begin_ = end_ = 0;
  if (end_ == buffer_.size() && begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) return -1;  // cannot happen: heads are smaller than the buffer
  for (;;) {
    const ssize_t got = recv(socket_, buffer_.data() + end_, buffer_.size() - end_, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got > 0) end_ += static_cast<size_t>(got);
    return got;
  }
}

bool GuardedStream::wait_readable(Clock::time_point until, const std::function<bool()>& give_up) const {
  if (!give_up) return wait_readable(until);
  constexpr auto kSlice = std::chrono::milliseconds(100);
  while (!give_up()) {
    if (wait_readable(std::min(until, Clock::now() + kSlice))) return true;
    if (Clock::now() >= until) return false;
  }
  return false;
}

HeadWait GuardedStream::read_head(const HeadLimits& limits, Clock::time_point first_byte_by, Clock::time_point deadline,
                                  const std::function<bool()>& give_up) {
  HeadScanState scan;
  for (;;) {
    const std::string_view unread(buffer_.data() + begin_, end_ - begin_);
    switch (scan_request_head(unread, limits, scan)) {
      case HeadScan::Complete: return HeadWait::Ready;
      case HeadScan::TooLarge: return HeadWait::TooLarge;
      case HeadScan::Incomplete: break;
    }
    const bool started = !unread.empty();
    if (started ? !wait_readable(deadline) : !wait_readable(std::min(first_byte_by, deadline), give_up)) {
      if (!started && give_up && give_up()) return HeadWait::Closed;
      return started || first_byte_by >= deadline ? HeadWait::TimedOut : HeadWait::Closed;
    }
    if (fill() <= 0) return HeadWait::Closed;
  }
}

void GuardedStream::begin_request(Clock::time_point deadline, size_t budget) {
  deadline_ = deadline;
  budget_ = budget;
  delivered_ = 0;
  timed_out_ = over_budget_ = false;
}

bool GuardedStream::is_readable() const { return begin_ < end_ || wait_readable(deadline_); }

ssize_t GuardedStream::read(char* out, size_t size) {
  if (timed_out_ || over_budget_) return -1;
  if (begin_ == end_) {
    if (!wait_readable(deadline_)) {
      timed_out_ = true;
      return -1;
    }
    const ssize_t got = fill();
    if (got <= 0) return got;
  }
  size = std::min(size, end_ - begin_);
  if (delivered_ + size > budget_) {
    over_budget_ = true;
    return -1;
  }
  std::memcpy(out, buffer_.data() + begin_, size);
  begin_ += size;
  delivered_ += size;
  return static_cast<ssize_t>(size);
}

bool GuardedStream::is_writable() const {
  for (;;) {
    pollfd p{socket_, POLLOUT, 0};
    const int ready = poll(&p, 1, static_cast<int>(write_timeout_.count()));
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
  }
}

ssize_t GuardedStream::write(const char* data, size_t size) {
  if (!is_writable()) return -1;
  for (;;) {
    const ssize_t sent = send(socket_, data, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    return sent;
  }
}

void GuardedStream::get_remote_ip_and_port(std::string& ip, int& port) const { address_of(socket_, true, ip, port); }

void GuardedStream::get_local_ip_and_port(std::string& ip, int& port) const { address_of(socket_, false, ip, port); }

}  // namespace lumen::http
