#pragma once
// The bounded hand-over between the thread reading a decode instance's answer and the thread
// writing it to the client. The reader blocks while `capacity_bytes` are waiting, so a client
// that reads slowly slows the instance down (TCP pushes back) instead of growing the proxy's
// memory; the writer takes whatever has arrived, so each SSE event goes out as soon as it came.
// Either side may leave: the writer by abandon() (the client left), the reader by close().
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

namespace lumen::proxy {

class RelayQueue {
 public:
  explicit RelayQueue(size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  // --- the reader's side ---
  // The answer's status line and headers arrived. False when the writer has left.
  bool open(int status, std::string content_type);
  // Part of the body; blocks while the queue is full. False when the writer has left.
  bool push(const char* data, size_t size);
  // The exchange ended: Success when the body arrived whole.
  void close(httplib::Error error);

  // --- the writer's side ---
  enum class State { Waiting, Open, Closed };
  // Waits up to `timeout` for the head (or the end without one); returns where things stand.
  State wait_for_head(std::chrono::milliseconds timeout) const;
  int status() const;
  std::string content_type() const;
  httplib::Error error() const;  // once Closed

  struct Taken {
    std::string bytes;      // everything that was waiting (may be empty)
    bool ended = false;     // nothing more will come
    bool complete = false;  // when ended: the body arrived whole
  };
  // Waits up to `timeout` for bytes or the end.
  Taken take(std::chrono::milliseconds timeout);
  // Waits up to `timeout` for the reader's close(); returns whether it came.
  bool wait_closed(std::chrono::milliseconds timeout);
  // The writer leaves: the reader's next push() (or one it is blocked in) returns false.
  void abandon();

 private:
  const size_t capacity_bytes_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<std::string> chunks_;
  size_t queued_bytes_ = 0;
  bool has_head_ = false;
  int status_ = 0;
  std::string content_type_;
  bool closed_ = false;
  httplib::Error error_ = httplib::Error::Success;
  bool abandoned_ = false;
};

}  // namespace lumen::proxy
