#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/block_hash_table.h"
#include "util/error.h"

namespace lumen::kv {
namespace {

TEST(BlockHash, EveryInputChangesTheHash) {
  const std::vector<int32_t> tokens = {1, 2, 3, 4};
  const BlockHash base = hash_block(kRootBlockHash, 0, tokens);
  EXPECT_EQ(base, hash_block(kRootBlockHash, 0, tokens));
  EXPECT_NE(base, hash_block(kRootBlockHash + 1, 0, tokens));
  EXPECT_NE(base, hash_block(kRootBlockHash, 1, tokens));
  EXPECT_NE(base, hash_block(kRootBlockHash, 0, std::vector<int32_t>{1, 2, 4, 3}));
  EXPECT_NE(base, hash_block(kRootBlockHash, 0, std::vector<int32_t>{1, 2, 3}));
  // The odd last token and a zero pair pack into the same word: the length tells them apart.
  EXPECT_NE(hash_block(0, 0, std::vector<int32_t>{7}), hash_block(0, 0, std::vector<int32_t>{7, 0}));
  // Negative ids use all 32 bits, they do not alias small positive ones.
  EXPECT_NE(hash_block(0, 0, std::vector<int32_t>{-1, 0}), hash_block(0, 0, std::vector<int32_t>{0, -1}));
}

TEST(BlockHash, NoCollisionsOverManySmallBlocks) {
  // All 3^8 blocks of 8 tokens over a 3-token alphabet, chained to two parents: 13122 keys.
  std::unordered_set<BlockHash> seen;
  std::vector<int32_t> tokens(8);
  for (BlockHash parent : {kRootBlockHash, BlockHash{12345}}) {
    for (int code = 0; code < 6561; ++code) {
      for (int i = 0, c = code; i < 8; ++i, c /= 3) tokens[i] = c % 3;
      EXPECT_TRUE(seen.insert(hash_block(parent, 0, tokens)).second);
    }
  }
}

TEST(BlockHash, OutputBitsAreBalanced) {
  // Flipping one token bit flips about half of the 64 output bits (avalanche), on average.
  std::mt19937_64 rng(1);
  std::vector<int32_t> tokens(16);
  double total = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    for (auto& x : tokens) x = static_cast<int32_t>(rng() % 50000);
    const BlockHash a = hash_block(kRootBlockHash, 0, tokens);
    tokens[rng() % 16] ^= 1 << (rng() % 16);
    total += __builtin_popcountll(a ^ hash_block(kRootBlockHash, 0, tokens));
  }
  EXPECT_NEAR(total / trials, 32.0, 1.0);
}

TEST(BlockHashTable, AgreesWithAStdMapUnderRandomInsertsAndErases) {
  const int32_t max_entries = 64;
  BlockHashTable table(max_entries);
  std::unordered_map<BlockHash, int32_t> model;
  std::mt19937_64 rng(7);
  // Keys from a small range so lookups of absent keys and re-inserts happen often.
  for (int step = 0; step < 20000; ++step) {
    const BlockHash key = rng() % 200;
    if (rng() % 2 == 0 && model.size() < max_entries) {
      const int32_t value = static_cast<int32_t>(rng() % 1000);
      const bool stored = table.insert(key, value);
      EXPECT_EQ(stored, !model.contains(key));
      if (stored) model[key] = value;
    } else if (model.contains(key)) {
      table.erase(key);
      model.erase(key);
    }
    ASSERT_EQ(table.size(), static_cast<int32_t>(model.size()));
    for (BlockHash k = 0; k < 200; k += 7) {
      const auto it = model.find(k);
      ASSERT_EQ(table.find(k), it == model.end() ? -1 : it->second) << "key " << k << " step " << step;
    }
  }
}

TEST(BlockHashTable, RefusesMisuse) {
  BlockHashTable table(1);
  EXPECT_TRUE(table.insert(5, 0));
  EXPECT_FALSE(table.insert(5, 1));
  EXPECT_EQ(table.find(5), 0);
  EXPECT_THROW(table.insert(6, 1), Error);  // over the capacity it was sized for
  EXPECT_THROW(table.erase(6), Error);
  EXPECT_THROW(table.insert(7, -1), Error);
}

}  // namespace
}  // namespace lumen::kv
