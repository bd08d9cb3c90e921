// Moving a prompt's K/V between two pools (disaggregated prefill and decode): the sender lists
// the blocks of transfer_blocks(), the receiver makes room for them with reserve_import() and
// publishes them, and a request on the receiver then adopts exactly what the sender had, for
// every layer group, sliding windows included.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "kv/sequence_kv.h"
#include "util/error.h"

namespace lumen::kv {
namespace {

constexpr int32_t kBlock = 4;
using Label = std::pair<size_t, size_t>;  // (group, position block): what a block's bytes hold

// Gemma 3's pattern with a window of 9 positions: five local layers, then a global one.
KvLayout windowed_layout() {
  std::vector<int64_t> w(12, 9);
  w[5] = w[11] = 0;
  return make_kv_layout(w, true);
}

std::vector<int32_t> tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// One engine's pool and the "bytes" of its blocks.
struct Side {
  explicit Side(const KvLayout& l) : layout(l), pool(256, kBlock) {
    space = {&pool, &layout, layout.has_windows() ? *pool.allocate() : -1};
  }
  // Computes tokens [0, n) in chunks of 6 as the engine does: reserve, write, commit.
  void compute(const std::vector<int32_t>& t, int64_t n) {
    SequenceKv seq(space, 1);
    int64_t done = seq.adopt_cached_prefix(t, n);
    std::vector<BlockCopy> copies;
    while (done < n) {
      const int64_t len = std::min<int64_t>(6, n - done);
      ASSERT_TRUE(seq.reserve(done, len, copies));
      for (size_t g = 0; g < seq.n_groups(); ++g) {
        for (int64_t i = done / kBlock; i <= (done + len - 1) / kBlock; ++i) {
          bytes[seq.table(g)[static_cast<size_t>(i)]] = {g, static_cast<size_t>(i)};
        }
      }
      done += len;
      seq.commit(t, done);
    }
    seq.release_all();
  }
  KvLayout layout;
  BlockPool pool;
  KvSpace space;
  std::map<BlockId, Label> bytes;
};

// The receiver's request: adopts what it may and reads what its blocks hold.
std::vector<Label> adopted_by_a_request(Side& side, const std::vector<int32_t>& t, int64_t expect) {
  SequenceKv seq(side.space, 1);
  EXPECT_EQ(seq.adopt_cached_prefix(t, std::ssize(t) - 1), expect);
  std::vector<Label> held;
  for (BlockId b : seq.blocks_from(0, expect)) held.push_back(side.bytes.at(b));
  seq.release_all();
  side.pool.check_consistency();
  return held;
}

void transfer(Side& from, Side& to, const std::vector<int32_t>& t, int64_t known_expected, int64_t n_expected) {
  SequenceKv sender(from.space, 1);
  const int64_t n = sender.adopt_cached_prefix(t, std::ssize(t) - 1, false);
  ASSERT_EQ(n, n_expected);
  SequenceKv receiver(to.space, 1);
  const int64_t known = receiver.adopt_cached_prefix(t, n, false);
  ASSERT_EQ(known, known_expected);
  const std::vector<BlockId> out = sender.blocks_from(known, n);
  ASSERT_TRUE(receiver.reserve_import(known, n));
  const std::vector<BlockId> in = receiver.blocks_from(known, n);
  ASSERT_EQ(in.size(), out.size());
  ASSERT_EQ(in.size(), transfer_blocks(to.layout, known, n, kBlock).size());
  for (size_t i = 0; i < in.size(); ++i) to.bytes[in[i]] = from.bytes.at(out[i]);
  receiver.commit(std::span<const int32_t>(t).first(static_cast<size_t>(n)), n);
  sender.release_all();
  receiver.release_all();
}

std::vector<Label> expected_labels(const KvLayout& layout, int64_t n) {
  std::vector<Label> labels;
  for (const TransferBlock& b : transfer_blocks(layout, 0, n, kBlock)) labels.emplace_back(b.group, b.index);
  return labels;
}

TEST(TransferBlocks, EachGroupFromItsWindowOrWhatIsKnown) {
  const KvLayout layout = windowed_layout();
  ASSERT_EQ(layout.n_groups(), 6u);
  // At 24 positions a window of 9 needs positions 16.. (block 4 on); the full group every block.
  const std::vector<TransferBlock> all = transfer_blocks(layout, 0, 24, kBlock);
  EXPECT_EQ(all.size(), 6u + 5u * 2u);
  EXPECT_EQ(all[6].group, 1u);
  EXPECT_EQ(all[6].index, 4u);
  EXPECT_EQ(transfer_blocks(layout, 20, 24, kBlock).size(), 6u);  // the last block of each group
  EXPECT_TRUE(transfer_blocks(layout, 24, 24, kBlock).empty());
  EXPECT_THROW(transfer_blocks(layout, 2, 24, kBlock), Error);
  EXPECT_THROW(transfer_blocks(layout, 0, 25, kBlock), Error);
  EXPECT_THROW(transfer_blocks(layout, 28, 24, kBlock), Error);
}

TEST(SequenceTransfer, AWindowedPromptMovesAndIsAdoptedWithTheSendersBlocks) {
  Side prefill(windowed_layout()), decode(windowed_layout());
  const std::vector<int32_t> t = tokens(31);
  prefill.compute(t, 31);
  transfer(prefill, decode, t, 0, 28);
  EXPECT_EQ(adopted_by_a_request(decode, t, 28), expected_labels(decode.layout, 28));
}

TEST(SequenceTransfer, OnlyTheBlocksTheReceiverLacksMove) {
  for (const KvLayout& layout : {windowed_layout(), make_kv_layout(std::vector<int64_t>(4, 0), true)}) {
    Side prefill(layout), decode(layout);
    const std::vector<int32_t> t = tokens(43);
    prefill.compute(t, 43);
    decode.compute(t, 13);  // an earlier, shorter turn: 12 positions cached
    transfer(prefill, decode, t, 12, 40);
    EXPECT_EQ(adopted_by_a_request(decode, t, 40), expected_labels(layout, 40));
  }
}

TEST(SequenceTransfer, NoRoomChangesNothing) {
  Side prefill(windowed_layout());
  const std::vector<int32_t> t = tokens(31);
  prefill.compute(t, 31);
  KvLayout layout = windowed_layout();
  BlockPool small(8, kBlock);
  const KvSpace space{&small, &layout, *small.allocate()};
  SequenceKv receiver(space, 1);
  EXPECT_FALSE(receiver.reserve_import(0, 28));
  EXPECT_EQ(receiver.n_held_blocks(), 0);
  EXPECT_EQ(small.n_available(), 7);
  small.check_consistency();
}

TEST(SequenceTransfer, AnImportMustStartWhereTheAdoptedPrefixEnds) {
  Side decode(windowed_layout());
  SequenceKv receiver(decode.space, 1);
  EXPECT_THROW(receiver.reserve_import(8, 28), Error);  // holds nothing, not 8 positions
  EXPECT_THROW(receiver.reserve_import(0, 30), Error);  // not whole blocks
}

}  // namespace
}  // namespace lumen::kv
