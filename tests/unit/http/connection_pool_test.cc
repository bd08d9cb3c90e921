// ConnectionPool: threads start as tasks need them, up to the limit; a bounded number of tasks
// wait; the rest run at once on the caller's thread, flagged as refused.
#include "http/connection_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace lumen::http {
namespace {

using namespace std::chrono_literals;

TEST(ConnectionPool, RefusesPastThreadsPlusQueue) {
  ConnectionPool pool(2, 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> served{0}, refused{0};
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> refused_on_caller{true};
  auto task = [&] {
    if (ConnectionPool::refusing_this_connection()) {
      refused_on_caller = refused_on_caller && std::this_thread::get_id() == caller;
      ++refused;
      return;
    }
    released.wait();
    ++served;
  };
  for (int i = 0; i < 5; ++i) pool.enqueue(task);  // 2 run, 1 waits, 2 are refused
  EXPECT_EQ(refused.load(), 2);
  EXPECT_TRUE(refused_on_caller.load());
  release.set_value();
  pool.shutdown();
  EXPECT_EQ(served.load(), 3);
  EXPECT_FALSE(ConnectionPool::refusing_this_connection());
}

TEST(ConnectionPool, AFreedThreadTakesTheNextTask) {
  ConnectionPool pool(1, 1);  // one place to wait: the thread may not be idle again yet
  std::atomic<int> served{0}, refused{0};
  auto task = [&] {
    if (ConnectionPool::refusing_this_connection()) {
      ++refused;
    } else {
      ++served;
    }
  };
  for (int i = 0; i < 20; ++i) {
    pool.enqueue(task);
    // The one thread is idle again once the task is done.
    for (int wait = 0; wait < 1000 && served.load() + refused.load() < i + 1; ++wait) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(1ms);
  }
  pool.shutdown();
  EXPECT_EQ(served.load(), 20);
  EXPECT_EQ(refused.load(), 0);
}

}  // namespace
}  // namespace lumen::http
