// Tensor parallelism's step messages (engine/shard_step.h): what rank 0 records and the other
// ranks replay. Replayed on a second cache of the same model, a step leaves exactly the K/V
// that making its changes and forward passes directly leaves; a message cut anywhere is refused
// or replayed up to a whole op, never read past its end (run under the sanitizers too).
#include <cstring>
#include <vector>

#include "engine/shard_step.h"
#include "synth_engine.h"
#include "util/error.h"

namespace lumen::engine {
namespace {

class ShardStepTest : public testing::SynthEngineTest {
 protected:
  // Two layers: the second layer's K/V depends on the first's attention, so on the tree mask.
  static void SetUpTestSuite() { set_up_model(2); }

  static std::vector<uint8_t> contents(const model::KvCache& cache) {
    std::vector<uint8_t> all(cache.block_host_bytes() * static_cast<size_t>(cache.n_blocks()));
    for (int64_t b = 0; b < cache.n_blocks(); ++b) cache.read_block(b, all.data() + static_cast<size_t>(b) * cache.block_host_bytes());
    return all;
  }
};

TEST_F(ShardStepTest, ReplayLeavesTheSameKvAsMakingTheChanges) {
  model::Transformer& transformer = *model_->transformer;
  const model::HParams& hp = transformer.hparams();
  model::KvCache direct(*backend_, hp, 8, 4), replayed(*backend_, hp, 8, 4);
  SwapSpace swap_direct(2, direct.block_host_bytes()), swap_replayed(2, replayed.block_host_bytes());
  for (int64_t b = 0; b < 8; ++b) {
    direct.zero_block(b);
    replayed.zero_block(b);
  }
  ShardStepWriter step;

  // A prefill of 6 tokens into blocks 2 and 5 (a table out of order).
  const std::vector<int32_t> tokens = testing::SynthEngineTest::prompt(6, 1);
  const std::vector<int32_t> positions = {0, 1, 2, 3, 4, 5};
  const std::vector<int32_t> table = {2, 5};
  const backend::SequenceSlice prefill{0, 6, 0, table};
  const model::ForwardBatch first{tokens, positions, std::span(&prefill, 1), {}};
  std::vector<float> logits(hp.vocab_size);
  transformer.forward(first, direct, nullptr);
  step.forward(first);
  // Copy-on-write, a swap out and back into another block, a zeroed block, a moved position.
  direct.copy_block(5, 6);
  step.copy_block(5, 6);
  direct.read_block(2, swap_direct.slot_data(1));
  step.swap_out(2, 1);
  direct.write_block(7, swap_direct.slot_data(1));
  step.swap_in(7, 1);
  direct.zero_block(2);
  step.zero_block(2);
  direct.copy_position(6, 1, 6, 3);
  step.copy_position(6, 1, 6, 3);
  // A token tree after the prefix in blocks 7, 6: two branches at depth 1, a third row on the
  // first; each row has its position and sees its ancestors only.
  const std::vector<int32_t> tree_tokens = testing::SynthEngineTest::prompt(3, 2);
  const std::vector<int32_t> tree_positions = {6, 6, 7};
  const std::vector<uint8_t> visible = {1, 0, 0, 0, 1, 0, 1, 0, 1};
  const std::vector<int32_t> tree_table = {7, 6, 3};
  backend::SequenceSlice tree{0, 3, 6, tree_table, visible};
  tree.positions = tree_positions;
  const std::vector<int32_t> logit_rows = {2};
  const model::ForwardBatch second{tree_tokens, tree_positions, std::span(&tree, 1), logit_rows};
  transformer.forward(second, direct, logits.data());
  step.forward(second);

  ShardTarget target{transformer, replayed, &swap_replayed};
  apply_shard_step(step.bytes(), target);
  EXPECT_EQ(contents(replayed), contents(direct));
  EXPECT_EQ(std::memcmp(swap_replayed.slot_data(1), swap_direct.slot_data(1), direct.block_host_bytes()), 0);

  // Without the tree's mask and positions the second layer's K/V would differ: the replay
  // carried them (checked by dropping them from a fresh recording).
  model::KvCache unmasked(*backend_, hp, 8, 4);
  for (int64_t b = 0; b < 8; ++b) unmasked.zero_block(b);
  ShardTarget plain{transformer, unmasked, &swap_replayed};
  ShardStepWriter without;
  without.forward(first);
  without.copy_block(5, 6);
  without.swap_in(7, 1);
  without.copy_position(6, 1, 6, 3);
  backend::SequenceSlice chain{0, 3, 6, tree_table};
  without.forward({tree_tokens, tree_positions, std::span(&chain, 1), {}});
  apply_shard_step(without.bytes(), plain);
  EXPECT_NE(contents(unmasked), contents(direct));
}

TEST_F(ShardStepTest, ACutMessageIsRefusedNotOverread) {
  model::Transformer& transformer = *model_->transformer;
  model::KvCache cache(*backend_, transformer.hparams(), 8, 4);
  SwapSpace swap(2, cache.block_host_bytes());
  const std::vector<int32_t> tokens = testing::SynthEngineTest::prompt(3, 3);
  const std::vector<int32_t> positions = {0, 1, 2};
  const std::vector<int32_t> table = {1};
  const backend::SequenceSlice slice{0, 3, 0, table};
  ShardStepWriter step;
  step.copy_block(1, 2);
  step.shift_keys(table, 0);
  step.forward({tokens, positions, std::span(&slice, 1), {}});
  const std::span<const std::byte> whole = step.bytes();
  ShardTarget target{transformer, cache, &swap};
  int refused = 0;
  for (size_t n = 0; n < whole.size(); ++n) {
    // An exact copy of the prefix, so the sanitizers see a read past it.
    const std::vector<std::byte> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      apply_shard_step(cut, target);
    } catch (const Error&) {
      ++refused;
    }
  }
  // Every cut but those on an op boundary (nothing, after the copy, after the shift).
  EXPECT_EQ(refused, static_cast<int>(whole.size()) - 3);
  // A swap slot past the swap space is refused, not written.
  ShardStepWriter outside;
  outside.swap_out(1, 2);
  EXPECT_THROW(apply_shard_step(outside.bytes(), target), Error);
}

}  // namespace
}  // namespace lumen::engine
