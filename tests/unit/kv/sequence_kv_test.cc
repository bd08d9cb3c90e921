// KvLayout and SequenceKv: layer groups, sliding-window blocks released as they leave the window,
// the prefix cache across groups, forks and swapping.
#include "kv/sequence_kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "util/error.h"

namespace lumen::kv {
namespace {

// Gemma 3's pattern: five local layers, then a global one.
std::vector<int64_t> gemma3_windows(int n_layers, int64_t window) {
  std::vector<int64_t> w(static_cast<size_t>(n_layers), window);
  for (int l = 5; l < n_layers; l += 6) w[static_cast<size_t>(l)] = 0;
  return w;
}

std::vector<int32_t> iota_tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(KvLayout, Gemma3GroupsThreeLayersPerPage) {
  const KvLayout layout = make_kv_layout(gemma3_windows(18, 512), true);
  EXPECT_EQ(layout.group_size, 3);
  ASSERT_EQ(layout.n_groups(), 6u);
  EXPECT_EQ(layout.groups[0].window, 0);  // the full group anchors the prefix keys
  EXPECT_EQ(layout.groups[0].layers, (std::vector<int>{5, 11, 17}));
  for (size_t g = 1; g < 6; ++g) EXPECT_EQ(layout.groups[g].window, 512);
  EXPECT_EQ(layout.groups[1].layers, (std::vector<int>{0, 1, 2}));
  // Every layer sits in exactly one group, at its slot.
  for (size_t l = 0; l < 18; ++l) {
    const KvGroup& g = layout.groups[static_cast<size_t>(layout.group_of_layer[l])];
    EXPECT_EQ(g.layers[static_cast<size_t>(layout.slot_of_layer[l])], static_cast<int>(l));
  }
  EXPECT_TRUE(layout.has_windows());
}

TEST(KvLayout, Gemma3OneBHasGroupsOfTwo) {
  const KvLayout layout = make_kv_layout(gemma3_windows(26, 512), true);  // 4 global, 22 local
  EXPECT_EQ(layout.group_size, 2);
  EXPECT_EQ(layout.n_groups(), 13u);
}

TEST(KvLayout, NoWindowsOrFreeingOffIsOneGroupOfEveryLayer) {
  for (const auto& windows : {std::vector<int64_t>(30, 0), gemma3_windows(18, 512)}) {
    const KvLayout layout = make_kv_layout(windows, windows[0] == 0);
    if (windows[0] != 0) {
      const KvLayout off = make_kv_layout(windows, false);
      EXPECT_EQ(off.n_groups(), 1u);
      EXPECT_EQ(off.group_size, 18);
      EXPECT_FALSE(off.has_windows());
      continue;
    }
    EXPECT_EQ(layout.n_groups(), 1u);
    EXPECT_EQ(layout.group_size, 30);
  }
  EXPECT_THROW(make_kv_layout(std::vector<int64_t>{}, true), Error);
}

TEST(KvLayout, FirstBlockInWindowKeepsEveryKeyALaterQuerySees) {
  // A query at position p >= n sees keys (p - window, p]; a block may go only when all its
  // positions are below n - window + 1.
  for (int64_t window : {1, 3, 4, 8, 13}) {
    for (int64_t n = 0; n < 60; ++n) {
      const int64_t first = first_block_in_window(n, window, 4);
      const int64_t lowest_seen = std::max<int64_t>(0, n - window + 1);
      EXPECT_LE(first * 4, lowest_seen) << window << " " << n;      // nothing still seen is dropped
      EXPECT_GT((first + 1) * 4, lowest_seen) << window << " " << n;  // everything unseen is
    }
  }
  EXPECT_EQ(first_block_in_window(100, 0, 4), 0);
}

TEST(KvLayout, PagesForAndMaxTokensAgree) {
  const KvLayout layout = make_kv_layout(gemma3_windows(18, 64), true);
  // At 8k positions in decode steps the full group holds 512 blocks and each windowed one at most 5.
  EXPECT_LE(layout.pages_for(8192, 16, 1), 512 + 5 * 5);
  EXPECT_GE(layout.pages_for(8192, 16, 1), 512 + 5 * 4);
  // Steps of up to 512 positions: a windowed group also holds the longest step's span.
  EXPECT_LE(layout.pages_for(8192, 16, 512), 512 + 5 * (5 + 32 + 1));
  EXPECT_GE(layout.pages_for(8192, 16, 512), 512 + 5 * (4 + 32));
  for (const int64_t chunk : {1, 100, 512}) {
    for (int64_t pages : {6, 7, 40, 100, 1000}) {
      const int64_t tokens = layout.max_tokens(pages, 16, chunk);
      EXPECT_LE(layout.pages_for(tokens, 16, chunk), pages);
      EXPECT_GT(layout.pages_for(tokens + 16, 16, chunk), pages);
    }
  }
  // With every layer windowed, a few pages hold any length.
  const KvLayout local = make_kv_layout(std::vector<int64_t>(4, 32), true);
  EXPECT_GE(local.max_tokens(local.pages_for(1 << 20, 16, 64), 16, 64), 1 << 20);
}

// pages_for looks at the last two blocks' worth of step ends only; it must equal the most pages
// any step of any sequence up to n_tokens holds, counted here step end by step end, each group's
// span running from the block its first query needs to the block of its last position.
TEST(KvLayout, PagesForIsTheMostAnyStepHolds) {
  for (const int64_t window : {4, 13, 64}) {
    const KvLayout layout = make_kv_layout(gemma3_windows(12, window), true);
    for (const int64_t block : {1, 4, 16}) {
      for (const int64_t chunk : {1, 3, 16, 50, 200}) {
        int64_t most = 0;
        for (int64_t n = 0; n <= 400; ++n) {
          if (n > 0) {
            const int64_t start = std::max<int64_t>(0, n - chunk), last_block = (n - 1) / block;
            int64_t pages = 0;
            for (const KvGroup& g : layout.groups) {
              const int64_t first = g.window > 0 ? std::max<int64_t>(0, start - g.window + 1) / block : 0;
              pages += last_block + 1 - first;
            }
            most = std::max(most, pages);
          }
          ASSERT_EQ(layout.pages_for(n, block, chunk), most)
              << "window " << window << " block " << block << " chunk " << chunk << " n " << n;
        }
      }
    }
  }
}

// Four layers: one full, three windowed (window 8), blocks of 4 positions: group 0 full, groups
// 1..3 windowed, one layer per page.
class SequenceKvTest : public ::testing::Test {
 protected:
  static constexpr int64_t kWindow = 8;
  static constexpr int32_t kBlock = 4;

  explicit SequenceKvTest(int32_t n_blocks = 64)
      : layout_(make_kv_layout(std::vector<int64_t>{kWindow, 0, kWindow, kWindow}, true)), pool_(n_blocks, kBlock) {
    space_ = {&pool_, &layout_, *pool_.allocate()};
  }

  // Reserves and commits tokens[n_computed, end) as one step.
  void step(SequenceKv& seq, const std::vector<int32_t>& tokens, int64_t n_computed, int64_t end) {
    std::vector<BlockCopy> copies;
    ASSERT_TRUE(seq.reserve(n_computed, end - n_computed, copies));
    seq.commit(std::span(tokens).first(static_cast<size_t>(end)), end);
  }

  // What a sequence of n computed positions must hold: every block in the full group, the
  // window's blocks in the others.
  int64_t expected_held(int64_t n) const {
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    return blocks + 3 * (blocks - first_block_in_window(n, kWindow, kBlock));
  }

  KvLayout layout_;
  BlockPool pool_;
  KvSpace space_;
};

TEST_F(SequenceKvTest, WindowedGroupsHoldOnlyTheirWindowWhileDecoding) {
  const std::vector<int32_t> tokens = iota_tokens(200);
  SequenceKv seq(space_, 1);
  step(seq, tokens, 0, 10);  // a prefill chunk, then one token at a time
  for (int64_t n = 10; n < 200; ++n) {
    step(seq, tokens, n, n + 1);
    ASSERT_EQ(seq.n_held_blocks(), expected_held(n + 1)) << n;
    ASSERT_EQ(pool_.n_used(), 1 + expected_held(n + 1)) << n;  // + the null block
  }
  // Dropped entries name the null block; the full group's table has no null entry.
  for (size_t g = 1; g < 4; ++g) {
    const auto table = seq.table(g);
    ASSERT_EQ(table.size(), 50u);
    const int64_t first = first_block_in_window(200, kWindow, kBlock);
    for (int64_t i = 0; i < first; ++i) EXPECT_EQ(table[static_cast<size_t>(i)], space_.null_block);
    for (size_t i = static_cast<size_t>(first); i < table.size(); ++i) EXPECT_NE(table[i], space_.null_block);
  }
  for (BlockId id : seq.table(0)) EXPECT_NE(id, space_.null_block);
  seq.release_all();
  EXPECT_EQ(pool_.n_used(), 1);
  pool_.check_consistency();
}

TEST_F(SequenceKvTest, ALongPrefillChunkHoldsItsWholeChunkUntilCommitted) {
  const std::vector<int32_t> tokens = iota_tokens(48);
  SequenceKv seq(space_, 1);
  std::vector<BlockCopy> copies;
  EXPECT_EQ(seq.blocks_needed(0, 48), 4 * 12);  // the chunk's queries see all of it
  ASSERT_TRUE(seq.reserve(0, 48, copies));
  EXPECT_EQ(seq.n_held_blocks(), 48);
  seq.commit(tokens, 48);
  EXPECT_EQ(seq.n_held_blocks(), expected_held(48));
}

TEST_F(SequenceKvTest, PrefixIsAdoptedAfterTheDroppedBlocksWereEvicted) {
  const std::vector<int32_t> tokens = iota_tokens(41);
  {
    SequenceKv first(space_, 7);
    step(first, tokens, 0, 20);
    for (int64_t n = 20; n < 41; ++n) step(first, tokens, n, n + 1);
  }  // released: its blocks stay cached; the windowed groups' early ones, dropped while it ran,
     // are the least recently released
  ASSERT_EQ(pool_.n_cached(), 40);  // 10 full blocks in each of the 4 groups
  const int32_t free_blocks = pool_.n_available() - pool_.n_cached();
  SequenceKv other(space_, 8);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(other.reserve(0, 36, copies));  // 4 groups x 9 blocks: more than the free ones
  ASSERT_GT(36, free_blocks);
  EXPECT_EQ(pool_.counters().evictions, static_cast<uint64_t>(36 - free_blocks));

  SequenceKv again(space_, 7);
  // The full group still has all 10 blocks and each windowed group its last window's.
  EXPECT_EQ(again.adopt_cached_prefix(tokens, 40), 40);
  EXPECT_EQ(again.n_held_blocks(), expected_held(40));
  pool_.check_consistency();
}

TEST_F(SequenceKvTest, PrefixStopsWhereAWindowedGroupMissesItsWindow) {
  const std::vector<int32_t> tokens = iota_tokens(40);
  SequenceKv first(space_, 3);
  step(first, tokens, 0, 40);  // one chunk: every block published, then the early ones dropped
  // A sequence with the same first 24 tokens, then others: its window blocks past 24 differ.
  std::vector<int32_t> other = tokens;
  for (size_t i = 24; i < other.size(); ++i) other[i] += 1000;
  SequenceKv second(space_, 3);
  EXPECT_EQ(second.adopt_cached_prefix(other, 39), 24);
  EXPECT_EQ(second.n_held_blocks(), expected_held(24));
  // A different salt sees nothing.
  SequenceKv stranger(space_, 4);
  EXPECT_EQ(stranger.adopt_cached_prefix(tokens, 39), 0);
  EXPECT_EQ(stranger.n_held_blocks(), 0);
}

TEST_F(SequenceKvTest, ForkSharesOnlyHeldBlocks) {
  const std::vector<int32_t> tokens = iota_tokens(30);
  SequenceKv parent(space_, 1);
  step(parent, tokens, 0, 30);
  const int32_t used = pool_.n_used();
  SequenceKv child = parent.fork();
  EXPECT_EQ(pool_.n_used(), used);
  std::vector<int32_t> longer = tokens;
  longer.push_back(7);
  step(child, longer, 30, 31);  // copy-on-write of each group's last, shared block
  parent.release_all();
  child.release_all();
  EXPECT_EQ(pool_.n_used(), 1);
  pool_.check_consistency();
}

TEST_F(SequenceKvTest, SwapRestoresTheSameHeldBlocksInOrder) {
  const std::vector<int32_t> tokens = iota_tokens(37);
  SequenceKv seq(space_, 1);
  step(seq, tokens, 0, 37);
  const std::vector<BlockId> out = seq.held_blocks(37);
  EXPECT_EQ(static_cast<int64_t>(out.size()), expected_held(37));
  seq.release_all();
  EXPECT_EQ(seq.blocks_needed_to_restore(37, 1), expected_held(38));
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.restore(37, 1, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(seq.held_blocks(37).size(), out.size());
  EXPECT_EQ(seq.n_held_blocks(), expected_held(38));
  for (size_t g = 1; g < 4; ++g) EXPECT_EQ(seq.table(g)[0], space_.null_block);
  pool_.check_consistency();
}

TEST_F(SequenceKvTest, ReserveIsAllOrNothingAcrossGroups) {
  BlockPool small(9, kBlock);
  KvSpace space{&small, &layout_, *small.allocate()};
  SequenceKv seq(space, 1);
  std::vector<BlockCopy> copies;
  EXPECT_EQ(seq.blocks_needed(0, 8), 8);
  ASSERT_TRUE(seq.reserve(0, 8, copies));
  EXPECT_FALSE(seq.reserve(8, 4, copies));  // needs 4, 0 left after the 8 + null
  EXPECT_EQ(seq.n_held_blocks(), 8);
  EXPECT_EQ(small.n_used(), 9);
}

}  // namespace
}  // namespace lumen::kv
