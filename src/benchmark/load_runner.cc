#include "benchmark/load_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "benchmark/progress_bar.h"
#include "benchmark/request_driver.h"
#include "util/error.h"

namespace lumen::benchmark {

namespace {

using Clock = std::chrono::steady_clock;

// Requests released by their arrival time, waiting for a worker.
class ReleaseQueue {
 public:
  void release(size_t index) {
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(index);
    }
    cv_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // The next released request; false once closed and drained.
  bool take(size_t& index) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !ready_.empty() || closed_; });
    if (ready_.empty()) return false;
    index = ready_.front();
    ready_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<size_t> ready_;
  bool closed_ = false;
};

}  // namespace

LoadRun run_load(const LoadOptions& options, const std::vector<std::string>& bodies,
                 const std::vector<double>& arrivals) {
  if (arrivals.size() != bodies.size()) fail("{} arrival times for {} requests", arrivals.size(), bodies.size());
  const size_t n = bodies.size();
  LoadRun run;
  run.results.resize(n);
  if (n == 0) return run;
  const size_t workers = options.max_concurrency > 0 ? std::min(static_cast<size_t>(options.max_concurrency), n) : n;

  ReleaseQueue queue;
  std::atomic<int64_t> done{0}, in_flight{0}, peak{0};
  const Clock::time_point start = Clock::now();
  auto worker = [&] {
    httplib::Client client(options.target.scheme_host_port);
    // A fresh connection per request: reusing one after a streamed response fails now and then
    // against some servers (llama-server: reads or writes on a socket the server has just
    // dropped), and a loopback connect costs microseconds next to a time to first token.
    client.set_keep_alive(false);
    client.set_connection_timeout(30);
    const auto timeout = static_cast<time_t>(options.timeout_s);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    size_t i = 0;
    while (queue.take(i)) {
      const int64_t now_in_flight = ++in_flight;
      int64_t seen = peak.load();
      while (now_in_flight > seen && !peak.compare_exchange_weak(seen, now_in_flight)) {
      }
      run.results[i] = send_streaming_request(client, options.target.path, options.headers, bodies[i]);
      --in_flight;
      ++done;
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers);
  try {
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(worker);
  } catch (const std::system_error& e) {
    queue.close();
    for (std::thread& t : threads) t.join();
    fail("cannot start {} client threads ({}); give --max-concurrency", workers, e.what());
  }

  std::atomic<bool> finished{false};
  std::thread progress;
  if (options.progress) {
    progress = std::thread([&] {
      const auto total = static_cast<int64_t>(n);
      while (!finished) {
        draw_progress_bar(done, total, std::chrono::duration<double>(Clock::now() - start).count());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  for (size_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrivals[i])));
    queue.release(i);
  }
  queue.close();
  for (std::thread& t : threads) t.join();
  run.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  run.peak_in_flight = peak;
  finished = true;
  if (progress.joinable()) {
    progress.join();
    draw_progress_bar(static_cast<int64_t>(n), static_cast<int64_t>(n), run.duration_s);
    finish_progress_bar();
  }
  return run;
}

}  // namespace lumen::benchmark
