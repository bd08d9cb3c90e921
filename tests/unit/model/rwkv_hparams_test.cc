// RWKV 7's hyperparameters as llama.cpp's converter writes them (wkv.head_size, the LoRA ranks,
// token_shift_count, attention.head_count 0): read into an attention-free model whose state
// slot is sized by them, and each hostile value refused in one line naming its key.
#include <gtest/gtest.h>

#include <string>

#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/state_cache.h"
#include "util/error.h"

namespace lumen::model {
namespace {

using gguf::Value;

gguf::GgufWriter minimal_rwkv7() {
  gguf::GgufWriter writer;
  auto& md = writer.metadata();
  md.set("general.architecture", Value::of_string("rwkv7"));
  md.set("rwkv7.context_length", Value::u32(1048576));
  md.set("rwkv7.embedding_length", Value::u32(128));
  md.set("rwkv7.block_count", Value::u32(3));
  md.set("rwkv7.attention.head_count", Value::u32(0));
  md.set("rwkv7.feed_forward_length", Value::u32(512));
  md.set("rwkv7.vocab_size", Value::u32(256));
  md.set("rwkv7.attention.layer_norm_epsilon", Value::f32(1e-5f));
  md.set("rwkv7.wkv.head_size", Value::u32(64));
  md.set("rwkv7.attention.decay_lora_rank", Value::u32(32));
  md.set("rwkv7.attention.iclr_lora_rank", Value::u32(32));
  md.set("rwkv7.attention.value_residual_mix_lora_rank", Value::u32(16));
  md.set("rwkv7.attention.gate_lora_rank", Value::u32(64));
  md.set("rwkv7.token_shift_count", Value::u32(2));
  return writer;
}

HParams read(gguf::GgufWriter& writer) {
  auto bytes = writer.write_to_memory();
  return read_hparams(gguf::GgufFile::parse(bytes));
}

TEST(RwkvHParams, ReadAsAnAttentionFreeModelWithAStatePerLayer) {
  auto writer = minimal_rwkv7();
  const HParams hp = read(writer);
  EXPECT_TRUE(has_rwkv(hp));
  EXPECT_FALSE(has_ssm(hp));
  EXPECT_TRUE(hp.attention_free);
  EXPECT_EQ(hp.wkv_head_size, 64u);
  EXPECT_EQ(hp.rwkv_value_lora, 16u);
  EXPECT_DOUBLE_EQ(hp.norm_eps, static_cast<double>(1e-5f));
  EXPECT_TRUE(has_recurrent_state(hp));
  EXPECT_EQ(recurrent_layer_count(hp), 3u);
  // Two token-shift rows of 128 and 2 heads' 64 x 64 wkv matrices, per layer, in f32.
  EXPECT_EQ(StateCache::bytes_per_slot(hp), 3 * (2 * 128 + 2 * 64 * 64) * sizeof(float));
}

TEST(RwkvHParams, HostileValuesAreRefusedNamingTheKey) {
  const std::vector<std::pair<const char*, uint32_t>> cases = {
      {"rwkv7.wkv.head_size", 48},               // does not divide 128
      {"rwkv7.wkv.head_size", 4096},             // a state of 4096^2 values a head
      {"rwkv7.attention.decay_lora_rank", 0},    // no LoRA
      {"rwkv7.attention.gate_lora_rank", 1000},  // wider than the model
      {"rwkv7.attention.value_residual_mix_lora_rank", 0},
      {"rwkv7.token_shift_count", 3},
  };
  for (const auto& [key, value] : cases) {
    auto writer = minimal_rwkv7();
    writer.metadata().set(key, Value::u32(value));
    try {
      read(writer);
      ADD_FAILURE() << key << " = " << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(RwkvHParams, AMissingRankIsRefused) {
  auto writer = minimal_rwkv7();
  writer.metadata().erase("rwkv7.attention.iclr_lora_rank");
  EXPECT_THROW(read(writer), Error);
}

}  // namespace
}  // namespace lumen::model
