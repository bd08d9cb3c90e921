#pragma once
// The threads that serve connections, with a bounded wait. httplib's own ThreadPool has a fixed
// number of threads and an unbounded queue: once every thread holds a slow client, new
// connections wait forever and even /health stops answering. This pool starts threads as
// connections need them, up to `max_threads`, lets at most `max_queued` more connections wait
// for one, and refuses the rest: their task runs at once on the accepting thread with
// refusing_this_connection() true, and GuardedHttpServer then answers 503 without blocking.
#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lumen::http {

class ConnectionPool : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t max_threads, size_t max_queued);
  ~ConnectionPool() override;

  void enqueue(std::function<void()> task) override;
  // Lets queued connections finish, then joins every thread.
  void shutdown() override;

  // True while the current thread runs a refused connection's task.
  static bool refusing_this_connection();

 private:
  void work();

  const size_t max_threads_;
  const size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queued_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace lumen::http
