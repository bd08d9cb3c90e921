// The hand-over between the decode reader and the client writer: bounded, and either side may leave.
#include "proxy/relay_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace lumen::proxy {
namespace {

using std::chrono::milliseconds;

TEST(RelayQueue, HeadThenBytesThenTheEnd) {
  RelayQueue queue(1024);
  EXPECT_EQ(queue.wait_for_head(milliseconds(0)), RelayQueue::State::Waiting);
  EXPECT_TRUE(queue.open(200, "text/event-stream"));
  EXPECT_EQ(queue.wait_for_head(milliseconds(0)), RelayQueue::State::Open);
  EXPECT_EQ(queue.status(), 200);
  EXPECT_EQ(queue.content_type(), "text/event-stream");
  EXPECT_TRUE(queue.push("ab", 2));
  EXPECT_TRUE(queue.push("cd", 2));
  RelayQueue::Taken taken = queue.take(milliseconds(0));
  EXPECT_EQ(taken.bytes, "abcd");
  EXPECT_FALSE(taken.ended);
  queue.close(httplib::Error::Success);
  taken = queue.take(milliseconds(0));
  EXPECT_TRUE(taken.ended);
  EXPECT_TRUE(taken.complete);
}

TEST(RelayQueue, AnExchangeThatBrokeOffIsNotComplete) {
  RelayQueue queue(1024);
  queue.close(httplib::Error::Connection);
  EXPECT_EQ(queue.wait_for_head(milliseconds(0)), RelayQueue::State::Closed);
  EXPECT_EQ(queue.error(), httplib::Error::Connection);
  const RelayQueue::Taken taken = queue.take(milliseconds(0));
  EXPECT_TRUE(taken.ended);
  EXPECT_FALSE(taken.complete);
}

TEST(RelayQueue, AFullQueueHoldsTheReaderUntilTheWriterTakes) {
  RelayQueue queue(4);
  ASSERT_TRUE(queue.push("abcd", 4));
  std::atomic<bool> pushed{false};
  std::thread reader([&] {
    queue.push("ef", 2);
    pushed = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(pushed);
  EXPECT_EQ(queue.take(milliseconds(0)).bytes, "abcd");
  reader.join();
  EXPECT_EQ(queue.take(milliseconds(100)).bytes, "ef");
}

TEST(RelayQueue, AWriterThatLeavesReleasesTheReader) {
  RelayQueue queue(4);
  ASSERT_TRUE(queue.push("abcd", 4));
  std::atomic<int> result{-1};
  std::thread reader([&] { result = queue.push("ef", 2) ? 1 : 0; });
  std::this_thread::sleep_for(milliseconds(20));
  queue.abandon();
  reader.join();
  EXPECT_EQ(result, 0);
  EXPECT_FALSE(queue.open(200, "x"));
}

TEST(RelayQueue, ALargeChunkPassesWhenNothingWaits) {
  RelayQueue queue(4);
  EXPECT_TRUE(queue.push("0123456789", 10));
  EXPECT_EQ(queue.take(milliseconds(0)).bytes, "0123456789");
}

}  // namespace
}  // namespace lumen::proxy
