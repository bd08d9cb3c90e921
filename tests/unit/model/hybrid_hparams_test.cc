// A hybrid's per-layer attention.head_count_kv (granite-hybrid, as llama.cpp's converter writes
// it: 0 for a Mamba 2 layer) and Granite's multipliers: read as llama.cpp reads them, and each
// hostile form refused in one line naming the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/writer.h"
#include "model/hparams.h"
#include "util/error.h"

namespace lumen::model {
namespace {

using gguf::Value;

gguf::GgufWriter minimal_hybrid(std::vector<int32_t> kv_heads) {
  gguf::GgufWriter writer;
  auto& md = writer.metadata();
  md.set("general.architecture", Value::of_string("granitehybrid"));
  md.set("granitehybrid.context_length", Value::u32(2048));
  md.set("granitehybrid.embedding_length", Value::u32(64));
  md.set("granitehybrid.block_count", Value::u32(4));
  md.set("granitehybrid.attention.head_count", Value::u32(4));
  md.set("granitehybrid.attention.head_count_kv", Value::i32_array(kv_heads));
  md.set("granitehybrid.feed_forward_length", Value::u32(128));
  md.set("granitehybrid.vocab_size", Value::u32(256));
  md.set("granitehybrid.ssm.conv_kernel", Value::u32(4));
  md.set("granitehybrid.ssm.inner_size", Value::u32(128));
  md.set("granitehybrid.ssm.state_size", Value::u32(16));
  md.set("granitehybrid.ssm.time_step_rank", Value::u32(8));
  md.set("granitehybrid.ssm.group_count", Value::u32(2));
  return writer;
}

HParams read(gguf::GgufWriter& writer) {
  auto bytes = writer.write_to_memory();
  return read_hparams(gguf::GgufFile::parse(bytes));
}

TEST(HybridHParams, ZeroKvHeadsMarkTheMambaLayers) {
  auto writer = minimal_hybrid({0, 2, 0, 2});
  writer.metadata().set("granitehybrid.embedding_scale", Value::f32(12.0f));
  writer.metadata().set("granitehybrid.logit_scale", Value::f32(3.0f));
  writer.metadata().set("granitehybrid.rope.scaling.finetuned", Value::of_bool(false));
  const HParams hp = read(writer);
  EXPECT_EQ(hp.head_count_kv, 2u);
  EXPECT_EQ(hp.ssm_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_TRUE(is_hybrid(hp));
  EXPECT_FALSE(hp.attention_free);
  EXPECT_EQ(ssm_layer_count(hp), 2u);
  EXPECT_TRUE(is_ssm_layer(hp, 2));
  EXPECT_FALSE(is_ssm_layer(hp, 3));
  EXPECT_DOUBLE_EQ(hp.embedding_scale, 12.0);
  EXPECT_DOUBLE_EQ(hp.logit_scale, 3.0);
  EXPECT_DOUBLE_EQ(hp.residual_scale, 0.0);  // absent
  EXPECT_FALSE(hp.rope_enabled);
}

TEST(HybridHParams, AnArrayWithoutZerosIsAnAttentionModel) {
  auto writer = minimal_hybrid({2, 2, 2, 2});
  const HParams hp = read(writer);
  EXPECT_EQ(hp.head_count_kv, 2u);
  EXPECT_TRUE(hp.ssm_layers.empty());
  EXPECT_TRUE(hp.rope_enabled);
}

// As llama.cpp: every layer may be a Mamba 2 layer (the count is then nominal).
TEST(HybridHParams, AllZerosMakeEveryLayerAMambaLayer) {
  auto writer = minimal_hybrid({0, 0, 0, 0});
  const HParams hp = read(writer);
  EXPECT_EQ(ssm_layer_count(hp), 4u);
  EXPECT_EQ(hp.head_count_kv, hp.head_count);
}

TEST(HybridHParams, HostileArraysAreRefusedNamingTheKey) {
  const std::vector<std::vector<int32_t>> cases = {
      {0, 2, 0},        // 3 entries for 4 layers
      {0, 2, 0, 2, 2},  // 5
      {0, 2, 0, 1},     // two KV head counts
      {0, -2, 0, 2},    // negative
      {0, 3, 0, 3},     // does not divide 4 query heads
  };
  for (const auto& kv : cases) {
    auto writer = minimal_hybrid(kv);
    try {
      read(writer);
      ADD_FAILURE() << "accepted " << kv.size() << " entries starting " << kv[0] << ", " << kv[1];
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("granitehybrid.attention.head_count_kv"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(HybridHParams, ZerosWithoutSsmKeysAreRefused) {
  auto writer = minimal_hybrid({0, 2, 0, 2});
  writer.metadata().erase("granitehybrid.ssm.inner_size");
  EXPECT_THROW(read(writer), Error);
}

TEST(HybridHParams, NegativeOrInfiniteMultipliersAreRefusedNamingTheKey) {
  for (const char* key : {"granitehybrid.residual_scale", "granitehybrid.attention.scale"}) {
    auto writer = minimal_hybrid({0, 2, 0, 2});
    writer.metadata().set(key, Value::f32(-1.0f));
    try {
      read(writer);
      ADD_FAILURE() << key << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace lumen::model
