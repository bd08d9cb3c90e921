#pragma once
// The byte stream one connection's requests are read from and answered on, in place of
// httplib's own SocketStream (GuardedHttpServer runs httplib's request parser over it). It owns
// its read buffer, so a request's head can be read and checked whole before httplib parses it,
// and it bounds every read by the request's deadline and byte budget: httplib alone times out
// each recv by itself (a client sending a byte every few seconds would never time out) and has
// no limit on header lines or on the length of a request line or a chunk-size line.
#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "http/request_head.h"

namespace lumen::http {

enum class HeadWait { Ready, Closed, TooLarge, TimedOut };

class GuardedStream : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  GuardedStream(int socket, std::chrono::milliseconds write_timeout);

  // Reads (and keeps buffered) the next request's head: Ready once it is complete within
  // `limits`. Closed when the peer leaves first, or sends nothing by `first_byte_by` (an idle
  // kept-alive connection), or `give_up()` says so before its first byte (checked a few times a
  // second: a server that stops or drains lets idle connections go); TimedOut when the rest has
  // not come by `deadline`.
  HeadWait read_head(const HeadLimits& limits, Clock::time_point first_byte_by, Clock::time_point deadline,
                     const std::function<bool()>& give_up = {});
  // From now on, reads for this request fail past `deadline` or past `budget` bytes delivered
  // (its head included).
  void begin_request(Clock::time_point deadline, size_t budget);
  bool timed_out() const { return timed_out_; }
  bool over_budget() const { return over_budget_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* out, size_t size) override;
  ssize_t write(const char* data, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return socket_; }

 private:
  // Waits until the socket is readable; false at `until`.
  bool wait_readable(Clock::time_point until) const;
  // The same, in slices, giving up early when `give_up()` says so.
  bool wait_readable(Clock::time_point until, const std::function<bool()>& give_up) const;
  // Appends what the socket has to the buffer: bytes read, 0 at end of stream, -1 on error.
  ssize_t fill();

  const int socket_;
  const std::chrono::milliseconds write_timeout_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // the unread bytes: buffer_[begin_, end_)
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t budget_ = 0, delivered_ = 0;
  bool timed_out_ = false, over_budget_ = false;
};

}  // namespace lumen::http
