// Picking: fewest requests in flight, ties in turn, tried instances left out.
#include "proxy/upstream_pool.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace lumen::proxy {
namespace {

UpstreamPool pool_of(int count) {
  std::vector<UpstreamAddress> addresses;
  for (int i = 0; i < count; ++i) addresses.push_back({"host" + std::to_string(i), 8000 + i});
  return UpstreamPool("decode", addresses);
}

TEST(UpstreamPool, TiesAreTakenInTurn) {
  UpstreamPool pool = pool_of(3);
  std::vector<size_t> picked;
  for (int i = 0; i < 6; ++i) picked.push_back(pool.pick()->index());  // each lease ends at once
  EXPECT_EQ(picked, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(UpstreamPool, FewestInFlightWins) {
  UpstreamPool pool = pool_of(3);
  std::optional<UpstreamPool::Lease> a = pool.pick();  // 0
  std::optional<UpstreamPool::Lease> b = pool.pick();  // 1
  std::optional<UpstreamPool::Lease> c = pool.pick();  // 2
  b.reset();                                           // 1 is free again
  EXPECT_EQ(pool.pick()->index(), 1u);
  std::optional<UpstreamPool::Lease> d = pool.pick();  // 1 (the only one with none in flight)
  EXPECT_EQ(d->index(), 1u);
  a.reset();
  EXPECT_EQ(pool.pick()->index(), 0u);
  EXPECT_EQ(pool.states()[2].in_flight, 1);
}

TEST(UpstreamPool, LeavesOutTheTriedOnes) {
  UpstreamPool pool = pool_of(3);
  EXPECT_EQ(pool.pick({0, 1})->index(), 2u);
  EXPECT_FALSE(pool.pick({0, 1, 2}).has_value());
}

TEST(UpstreamPool, LeasesCountInFlightUntilDestroyedOrMoved) {
  UpstreamPool pool = pool_of(1);
  std::optional<UpstreamPool::Lease> lease = pool.pick();
  UpstreamPool::Lease moved = std::move(*lease);
  lease.reset();  // the moved-from lease releases nothing
  EXPECT_EQ(pool.states()[0].in_flight, 1);
  { UpstreamPool::Lease gone = std::move(moved); }
  EXPECT_EQ(pool.states()[0].in_flight, 0);
  pool.count_failure(0);
  EXPECT_EQ(pool.states()[0].failures, 1u);
  EXPECT_EQ(pool.states()[0].url, "http://host0:8000");
}

TEST(UpstreamPool, ASessionKeepsItsInstanceAndSessionsSpreadOverAll) {
  UpstreamPool pool = pool_of(4);
  std::vector<int> sessions_on(4, 0);
  for (int s = 0; s < 400; ++s) {
    const uint64_t key = *session_key("conversation-" + std::to_string(s));
    const size_t first = pool.pick({}, key)->index();
    for (int turn = 0; turn < 3; ++turn) EXPECT_EQ(pool.pick({}, key)->index(), first);
    sessions_on[first] += 1;
  }
  for (int n : sessions_on) EXPECT_GT(n, 60);  // about 100 each
  EXPECT_EQ(session_key("conversation-7"), session_key("conversation-7"));
  EXPECT_FALSE(session_key(""));
  EXPECT_FALSE(session_key(std::string(kMaxSessionIdBytes + 1, 'x')));
}

TEST(UpstreamPool, ASessionLeavesItsInstanceOnlyWhenItIsMuchBusierOrTried) {
  UpstreamPool pool = pool_of(3);
  const uint64_t key = *session_key("busy-conversation");
  const size_t own = pool.pick({}, key)->index();
  std::vector<UpstreamPool::Lease> held;
  for (int64_t i = 0; i < kAffinitySlack; ++i) held.push_back(*pool.pick({}, key));
  EXPECT_EQ(pool.pick({}, key)->index(), own);  // kAffinitySlack more than the idle ones: still its own
  held.push_back(*pool.pick({}, key));
  const size_t second = pool.pick({}, key)->index();  // now one past the slack: the next in its order
  EXPECT_NE(second, own);
  EXPECT_EQ(pool.pick({}, key)->index(), second);
  held.clear();
  EXPECT_EQ(pool.pick({}, key)->index(), own);
  EXPECT_NE(pool.pick({own}, key)->index(), own);  // an instance that failed it is left out
}

}  // namespace
}  // namespace lumen::proxy
