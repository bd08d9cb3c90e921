#pragma once
// Answers written straight to a socket, for connections refused before cpp-httplib parses a
// request from them (accept queue full, a head too large or too slow), and a closer that ends
// such connections without destroying the answer.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/api_error.h"

namespace lumen::http {

// A whole HTTP/1.1 response carrying `error` in OpenAI's shape, with Connection: close.
std::string raw_error_response(const ApiError& error);

// Writes what the socket takes now (never blocks, never raises SIGPIPE).
void send_without_blocking(int socket, std::string_view bytes);

// Closing a socket whose peer is still sending makes the kernel answer with a reset, which can
// destroy the response before the client reads it. So: shut down our side, read and discard
// what still arrives for a short while, then close. One thread does it for every such socket.
class LingeringCloser {
 public:
  explicit LingeringCloser(std::chrono::milliseconds linger = std::chrono::milliseconds(2000),
                           size_t max_sockets = 1024);
  ~LingeringCloser();
  LingeringCloser(const LingeringCloser&) = delete;
  LingeringCloser& operator=(const LingeringCloser&) = delete;

  // Takes ownership of `socket`. Past `max_sockets` lingering at once it is closed at once.
  void close_after_response(int socket);

 private:
  struct Lingering {
    int socket;
    std::chrono::steady_clock::time_point until;
  };
  void run();

  const std::chrono::milliseconds linger_;
  const size_t max_sockets_;
  int wake_fd_;
  std::mutex mutex_;
  std::vector<Lingering> incoming_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lumen::http
