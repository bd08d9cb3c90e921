#pragma once
// The client's side of one connection, as cpp-httplib reads and writes it. Debian's httplib
// 0.11.4 leaves the reading of a request unbounded (any number of header lines of any length,
// and a timeout per recv that a client resets by sending a byte every few seconds). This stream
// puts each request under one deadline and one byte budget (head and body together), so a client
// holds a thread at most until the deadline and makes httplib read at most the budget. A write
// waits at most `write_timeout` for room, so a client that stops reading lets its thread go.
#include <httplib.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>

namespace lumen::proxy {

class ClientStream : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  ClientStream(int socket, std::chrono::milliseconds write_timeout) : socket_(socket), write_timeout_(write_timeout) {}

  // Waits until a request's first byte is there, at most `idle`; gives up early when `stop()`
  // says so (checked a few times a second). False when nothing came or the client closed.
  bool wait_for_request(std::chrono::milliseconds idle, const std::function<bool()>& stop);
  // The next request must be read by `deadline`, in at most `budget` bytes.
  void begin_request(Clock::time_point deadline, size_t budget);
  bool timed_out() const { return timed_out_; }
  bool over_budget() const { return over_budget_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return socket_; }

 private:
  // Reads what the socket has into the buffer, waiting until the deadline. False at the end of
  // the stream or on failure (timed_out_ says which when it is the deadline).
  bool fill();
  int milliseconds_left() const;

  const int socket_;
  const std::chrono::milliseconds write_timeout_;
  std::array<char, 4096> buffer_{};
  size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  size_t end_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t budget_ = std::numeric_limits<size_t>::max();
  size_t consumed_ = 0;  // bytes of this request handed to httplib
  bool timed_out_ = false;
  bool over_budget_ = false;
};

// Whether the peer of `socket` has closed or reset the connection, or shut down its sending side
// (a client that half-closes while waiting for its answer counts as gone, as in `lumen serve`).
// Never blocks.
bool peer_hung_up(int socket);

}  // namespace lumen::proxy
