// allocate / release / retain / find_cached / publish must never touch the heap: they run for
// every block of every step. This binary replaces the global operator new to count calls.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "kv/block_pool.h"

namespace {
std::atomic<long> g_heap_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace lumen::kv {
namespace {

TEST(BlockPoolHeap, HotPathsNeverAllocate) {
  const int32_t n = 64;
  BlockPool pool(n, 4);
  std::vector<BlockId> held;
  held.reserve(n);
  std::vector<int32_t> tokens(4);
  const long before = g_heap_allocations.load();
  for (int round = 0; round < 200; ++round) {
    while (auto id = pool.allocate()) held.push_back(*id);  // evicts cached blocks after round 0
    for (size_t i = 0; i < held.size(); ++i) {
      tokens = {round, static_cast<int32_t>(i), 0, 0};  // same size: assigns in place
      if (i % 2 == 0) pool.publish(held[i], {hash_block(kRootBlockHash, 0, tokens), kNoParent, 0, tokens});
      pool.retain(held[i]);
      pool.release(held[i]);
    }
    for (size_t i = held.size(); i-- > 0;) pool.release(held[i]);
    held.clear();
    tokens = {round, 2, 0, 0};
    const auto hit = pool.find_cached({hash_block(kRootBlockHash, 0, tokens), kNoParent, 0, tokens});
    ASSERT_TRUE(hit);  // a cached block with ref_count 0 ...
    pool.retain(hit->id);  // ... revived off the LRU
    pool.release(hit->id);
  }
  EXPECT_EQ(g_heap_allocations.load() - before, 0);
  EXPECT_GT(pool.counters().evictions, 0u);
  pool.check_consistency();
}

}  // namespace
}  // namespace lumen::kv
