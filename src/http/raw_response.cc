#include "http/raw_response.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace lumen::http {

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

}  // namespace

std::string raw_error_response(const ApiError& error) {
  const std::string body = dump_json(error.to_json());
  std::string retry;
  if (error.retry_after) retry = fmt::format("Retry-After: {}\r\n", *error.retry_after);
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
      error.status(), reason_phrase(error.status()), body.size(), retry, body);
}

void send_without_blocking(int socket, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = send(socket, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
}

LingeringCloser::LingeringCloser(std::chrono::milliseconds linger, size_t max_sockets)
    : linger_(linger),
      max_sockets_(max_sockets),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      thread_([this] { run(); }) {}

LingeringCloser::~LingeringCloser() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(wake_fd_);
}

void LingeringCloser::close_after_response(int socket) {
  shutdown(socket, SHUT_WR);  // the response is complete: the client sees its end at once
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && incoming_.size() < max_sockets_) {
      incoming_.push_back({socket, std::chrono::steady_clock::now() + linger_});
      socket = -1;
    }
  }
  if (socket >= 0) {
    close(socket);
    return;
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = write(wake_fd_, &one, sizeof(one));
}

void LingeringCloser::run() {
  std::vector<Lingering> lingering;
  std::vector<pollfd> polled;
  std::array<char, 16 * 1024> scratch{};
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) break;
      lingering.insert(lingering.end(), incoming_.begin(), incoming_.end());
      incoming_.clear();
    }
    polled.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (const Lingering& l : lingering) polled.push_back({l.socket, POLLIN | POLLRDHUP, 0});
    poll(polled.data(), polled.size(), 100);
    uint64_t drained = 0;
    [[maybe_unused]] ssize_t ignored = read(wake_fd_, &drained, sizeof(drained));
    const auto now = std::chrono::steady_clock::now();
    std::vector<Lingering> kept;
    for (size_t i = 0; i < lingering.size(); ++i) {
      bool done = now >= lingering[i].until;
      if (!done && polled[i + 1].revents != 0) {
        const ssize_t got = recv(lingering[i].socket, scratch.data(), scratch.size(), MSG_DONTWAIT);
        done = got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      }
      if (done) {
        close(lingering[i].socket);
      } else {
        kept.push_back(lingering[i]);
      }
    }
    lingering.swap(kept);
  }
  for (const Lingering& l : lingering) close(l.socket);
  std::lock_guard lock(mutex_);
  for (const Lingering& l : incoming_) close(l.socket);
  incoming_.clear();
}

}  // namespace lumen::http
