#include "model/hparams.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/writer.h"
#include "util/error.h"

namespace lumen::model {
namespace {

using gguf::Value;

gguf::GgufWriter minimal_llama() {
  gguf::GgufWriter writer;
  auto& md = writer.metadata();
  md.set("general.architecture", Value::of_string("llama"));
  md.set("llama.context_length", Value::u32(2048));
  md.set("llama.embedding_length", Value::u32(64));
  md.set("llama.block_count", Value::u32(2));
  md.set("llama.attention.head_count", Value::u32(4));
  md.set("llama.feed_forward_length", Value::u32(128));
  md.set("llama.vocab_size", Value::u32(256));
  return writer;
}

// A GGUF array of bools, as llama.cpp's converters write attention.sliding_window_pattern.
Value bool_array(std::vector<bool> flags) {
  gguf::Array array;
  array.element_type = gguf::ValueType::BOOL;
  array.length = flags.size();
  for (bool f : flags) array.raw.push_back(f ? 1 : 0);
  return Value::of_array(std::move(array));
}

// Each way a hyperparameter can be hostile, and the key the one-line error must name.
struct BadHParam {
  const char* key;
  Value value;
  const char* named;
};

TEST(HParams, HostileValuesAreRefusedNamingTheKey) {
  const BadHParam cases[] = {
      {"llama.block_count", Value::u32(0), "llama.block_count"},
      {"llama.block_count", Value::u32(1u << 30), "llama.block_count"},
      {"llama.embedding_length", Value::u32(0), "llama.embedding_length"},
      {"llama.context_length", Value::u32(0), "llama.context_length"},
      {"llama.feed_forward_length", Value::u32(0), "llama.feed_forward_length"},
      {"llama.attention.head_count", Value::u32(0), "llama.attention.head_count"},
      {"llama.attention.head_count", Value::u32(3), "llama.embedding_length"},  // 64 % 3
      {"llama.attention.head_count_kv", Value::u32(0), "llama.attention.head_count_kv"},
      {"llama.attention.head_count_kv", Value::u32(3), "llama.attention.head_count_kv"},
      {"llama.attention.key_length", Value::u32(0), "llama.attention.key_length"},
      {"llama.attention.key_length", Value::u32(1u << 31), "llama.attention.key_length"},
      {"llama.rope.dimension_count", Value::u32(15), "llama.rope.dimension_count"},
      {"llama.rope.dimension_count", Value::u32(32), "llama.rope.dimension_count"},  // > head_dim 16
      {"llama.rope.dimension_count", Value::u32(0), "llama.rope.dimension_count"},
      {"llama.vocab_size", Value::u32(0), "vocabulary size"},
      {"llama.rope.freq_base", Value::f32(-1.0f), "llama.rope.freq_base"},
      {"llama.attention.layer_norm_rms_epsilon", Value::f32(0.0f), "llama.attention.layer_norm_rms_epsilon"},
      {"llama.attention.sliding_window_pattern", bool_array({true, false, true}),
       "llama.attention.sliding_window_pattern"},  // 3 flags for 2 blocks
      {"llama.attention.sliding_window_pattern", Value::u32(1u << 20), "llama.attention.sliding_window_pattern"},
      {"llama.rope.freq_base_swa", Value::f32(-1.0f), "llama.rope.freq_base_swa"},
      {"llama.final_logit_softcapping", Value::f32(-30.0f), "llama.final_logit_softcapping"},
      {"llama.final_logit_softcapping", Value::f32(std::numeric_limits<float>::infinity()),
       "llama.final_logit_softcapping"},
      {"llama.attn_logit_softcapping", Value::f32(-50.0f), "llama.attn_logit_softcapping"},
      {"llama.attn_logit_softcapping", Value::f32(std::numeric_limits<float>::quiet_NaN()),
       "llama.attn_logit_softcapping"},
      {"llama.expert_count", Value::u32(1u << 20), "llama.expert_count"},
      {"llama.expert_used_count", Value::u32(2), "llama.expert_used_count"},  // no experts
  };
  for (const BadHParam& c : cases) {
    auto writer = minimal_llama();
    writer.metadata().set(c.key, c.value);
    auto bytes = writer.write_to_memory();
    try {
      read_hparams(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << c.key << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << c.key << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

// A model with experts: each way its expert keys can be hostile.
TEST(HParams, HostileExpertCountsAreRefusedNamingTheKey) {
  struct Case {
    uint32_t count, used, expert_ff;
    const char* named;
  };
  const Case cases[] = {
      {8, 0, 0, "llama.expert_used_count"},                  // experts, but none used
      {8, 9, 0, "llama.expert_used_count"},                  // more used than there are
      {1025, 2, 0, "llama.expert_count"},                    // beyond llama.cpp's 1024
      {8, 2, 1u << 30, "llama.expert_feed_forward_length"},  // absurd width
      {300, 200, 0, "llama.expert_feed_forward_length"},     // 128 / 200 = 0 wide
  };
  for (const Case& c : cases) {
    auto writer = minimal_llama();
    writer.metadata().set("llama.expert_count", Value::u32(c.count));
    writer.metadata().set("llama.expert_used_count", Value::u32(c.used));
    if (c.expert_ff != 0) writer.metadata().set("llama.expert_feed_forward_length", Value::u32(c.expert_ff));
    auto bytes = writer.write_to_memory();
    try {
      read_hparams(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << c.count << " / " << c.used << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

// DeepSeek-V2's latent attention and routing keys, as llama.cpp's converter writes them, with
// each way they can be hostile or inconsistent refused naming the key.
gguf::GgufWriter minimal_deepseek2() {
  gguf::GgufWriter writer;
  auto& md = writer.metadata();
  md.set("general.architecture", Value::of_string("deepseek2"));
  for (const auto& [key, value] : std::vector<std::pair<const char*, uint32_t>>{
           {"context_length", 2048}, {"embedding_length", 64}, {"block_count", 2}, {"attention.head_count", 4},
           {"attention.head_count_kv", 1}, {"feed_forward_length", 128}, {"vocab_size", 256},
           {"attention.kv_lora_rank", 32}, {"attention.key_length", 48}, {"attention.value_length", 32},
           {"attention.key_length_mla", 32}, {"attention.value_length_mla", 16}, {"rope.dimension_count", 16},
           {"expert_count", 8}, {"expert_used_count", 2}, {"expert_feed_forward_length", 32},
           {"expert_shared_count", 1}, {"leading_dense_block_count", 1}}) {
    md.set(std::string("deepseek2.") + key, Value::u32(value));
  }
  return writer;
}

TEST(HParams, ReadsLatentAttentionAndDeepSeekRouting) {
  auto writer = minimal_deepseek2();
  writer.metadata().set("deepseek2.expert_weights_scale", Value::f32(2.5f));
  writer.metadata().set("deepseek2.expert_weights_norm", Value::of_bool(true));
  writer.metadata().set("deepseek2.expert_gating_func", Value::u32(2));
  writer.metadata().set("deepseek2.expert_group_count", Value::u32(4));
  writer.metadata().set("deepseek2.expert_group_used_count", Value::u32(2));
  auto bytes = writer.write_to_memory();
  const HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_TRUE(is_mla(hp));
  EXPECT_EQ(kv_key_row(hp), 48u);
  EXPECT_EQ(kv_value_row(hp), 32u);
  EXPECT_TRUE(kv_values_in_keys(hp));
  EXPECT_EQ(hp.leading_dense_block_count, 1u);
  EXPECT_EQ(hp.expert_shared_count, 1u);
  EXPECT_FLOAT_EQ(static_cast<float>(hp.expert_weights_scale), 2.5f);
  EXPECT_EQ(hp.expert_weights_norm, std::optional<bool>(true));
  EXPECT_EQ(hp.expert_gating_func, 2u);
  EXPECT_EQ(hp.expert_group_count, 4u);
}

TEST(HParams, HostileLatentAttentionKeysAreRefusedNamingThem) {
  const BadHParam cases[] = {
      {"deepseek2.attention.head_count_kv", Value::u32(2), "multi-head latent attention"},
      {"deepseek2.attention.key_length", Value::u32(40), "multi-head latent attention"},
      {"deepseek2.attention.value_length", Value::u32(16), "multi-head latent attention"},
      {"deepseek2.attention.key_length_mla", Value::u32(16), "deepseek2.attention.key_length_mla"},
      {"deepseek2.attention.kv_lora_rank", Value::u32(1u << 30), "deepseek2.attention.kv_lora_rank"},
      {"deepseek2.attention.value_length_mla", Value::u32(1u << 30), "deepseek2.attention.value_length_mla"},
      {"deepseek2.leading_dense_block_count", Value::u32(3), "deepseek2.leading_dense_block_count"},
      {"deepseek2.expert_gating_func", Value::u32(9), "deepseek2.expert_gating_func"},
      {"deepseek2.expert_weights_scale", Value::f32(-1.0f), "deepseek2.expert_weights_scale"},
      {"deepseek2.expert_group_count", Value::u32(3), "deepseek2.expert_group_count"},  // 8 % 3
      {"deepseek2.rope.scaling.yarn_log_multiplier", Value::f32(-0.1f), "yarn_log_multiplier"},
  };
  for (const BadHParam& c : cases) {
    auto writer = minimal_deepseek2();
    writer.metadata().set(c.key, c.value);
    auto bytes = writer.write_to_memory();
    try {
      read_hparams(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << c.key << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << c.key << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  // Groups that cannot hold a token's experts.
  auto writer = minimal_deepseek2();
  writer.metadata().set("deepseek2.expert_group_count", Value::u32(4));
  writer.metadata().set("deepseek2.expert_group_used_count", Value::u32(0));
  auto bytes = writer.write_to_memory();
  EXPECT_THROW(read_hparams(gguf::GgufFile::parse(bytes)), Error);
  // More groups than a token's kept-group mask holds (64), each of 4 experts: refused at load,
  // not by the router inside a step.
  auto many = minimal_deepseek2();
  many.metadata().set("deepseek2.expert_count", Value::u32(65 * 4));
  many.metadata().set("deepseek2.expert_group_count", Value::u32(65));
  many.metadata().set("deepseek2.expert_group_used_count", Value::u32(1));
  auto many_bytes = many.write_to_memory();
  try {
    read_hparams(gguf::GgufFile::parse(many_bytes));
    ADD_FAILURE() << "65 expert groups were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deepseek2.expert_group_count"), std::string::npos) << e.what();
  }
  many.metadata().set("deepseek2.expert_group_count", Value::u32(64));
  many.metadata().set("deepseek2.expert_count", Value::u32(64 * 4));
  auto sixty_four = many.write_to_memory();
  EXPECT_EQ(read_hparams(gguf::GgufFile::parse(sixty_four)).expert_group_count, 64u);
}

TEST(HParams, ReadsExpertKeysWithLlamaCppsFallbacks) {
  auto writer = minimal_llama();
  writer.metadata().set("llama.expert_count", Value::u32(8));
  writer.metadata().set("llama.expert_used_count", Value::u32(2));
  auto bytes = writer.write_to_memory();
  HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(hp.expert_count, 8u);
  EXPECT_EQ(hp.expert_used_count, 2u);
  EXPECT_EQ(expert_ffn_width(hp), 64u);          // feed_forward_length / expert_used_count
  EXPECT_EQ(shared_expert_ffn_width(hp), 128u);  // feed_forward_length
  writer.metadata().set("llama.expert_feed_forward_length", Value::u32(48));
  writer.metadata().set("llama.expert_shared_feed_forward_length", Value::u32(96));
  bytes = writer.write_to_memory();
  hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(expert_ffn_width(hp), 48u);
  EXPECT_EQ(shared_expert_ffn_width(hp), 96u);
}

TEST(HParams, VocabularySizeMustMatchTheTokenList) {
  auto writer = minimal_llama();
  writer.metadata().set("tokenizer.ggml.tokens", Value::string_array({"a", "b", "c"}));
  auto bytes = writer.write_to_memory();
  EXPECT_THROW(read_hparams(gguf::GgufFile::parse(bytes)), Error);
}

TEST(HParams, DefaultsFollowFromTheRequiredKeys) {
  auto bytes = minimal_llama().write_to_memory();
  HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(hp.architecture, "llama");
  EXPECT_EQ(hp.head_count_kv, 4u);
  EXPECT_EQ(hp.head_dim, 16u);
  EXPECT_EQ(hp.rope_dimension_count, 16u);
  EXPECT_EQ(hp.rope_freq_base, 10000.0);
  EXPECT_EQ(hp.rope_scaling.type, "none");
  EXPECT_EQ(hp.sliding_window, 0u);
}

// llama.cpp gives Gemma 2 a 4096-position window when the file has no
// gemma2.attention.sliding_window; a file's own value wins; Gemma 3 has no default (its file
// must give one, which the architecture check enforces).
TEST(HParams, Gemma2sWindowDefaultsAsLlamaCppDefaultsIt) {
  auto file_of = [](const std::string& arch, std::optional<uint32_t> window) {
    gguf::GgufWriter writer = minimal_llama();
    gguf::GgufWriter renamed;
    for (const auto& [key, value] : writer.metadata().entries()) {
      std::string name = key;
      if (name.starts_with("llama.")) name = arch + name.substr(5);
      renamed.metadata().set(name, value);
    }
    renamed.metadata().set("general.architecture", Value::of_string(arch));
    if (window) renamed.metadata().set(arch + ".attention.sliding_window", Value::u32(*window));
    return renamed.write_to_memory();
  };
  EXPECT_EQ(read_hparams(gguf::GgufFile::parse(file_of("gemma2", std::nullopt))).sliding_window, 4096u);
  EXPECT_EQ(read_hparams(gguf::GgufFile::parse(file_of("gemma2", 1024))).sliding_window, 1024u);
  EXPECT_EQ(read_hparams(gguf::GgufFile::parse(file_of("gemma3", std::nullopt))).sliding_window, 0u);
}

TEST(HParams, ReadsOptionalKeys) {
  auto writer = minimal_llama();
  auto& md = writer.metadata();
  md.set("llama.attention.head_count_kv", Value::u32(2));
  md.set("llama.attention.key_length", Value::u32(32));
  md.set("llama.rope.freq_base", Value::f32(500000.0f));
  md.set("llama.rope.scaling.type", Value::of_string("yarn"));
  md.set("llama.rope.scaling.factor", Value::f32(4.0f));
  md.set("llama.attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
  auto bytes = writer.write_to_memory();
  HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(hp.head_count_kv, 2u);
  EXPECT_EQ(hp.head_dim, 32u);
  EXPECT_EQ(hp.rope_freq_base, 500000.0);
  EXPECT_EQ(hp.rope_scaling.type, "yarn");
  EXPECT_EQ(hp.rope_scaling.factor, 4.0);
  EXPECT_FLOAT_EQ(static_cast<float>(hp.norm_eps), 1e-6f);
}

TEST(HParams, ReadsRopeScalingAsLlamaCppDoes) {
  {  // YaRN: the original context defaults to the training context; the attention factor is read
    auto writer = minimal_llama();
    writer.metadata().set("llama.rope.scaling.type", Value::of_string("yarn"));
    writer.metadata().set("llama.rope.scaling.factor", Value::f32(4.0f));
    writer.metadata().set("llama.rope.scaling.attn_factor", Value::f32(0.5f));
    auto bytes = writer.write_to_memory();
    HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
    EXPECT_EQ(hp.rope_scaling.original_context_length, hp.context_length);
    EXPECT_EQ(hp.rope_scaling.attn_factor, 0.5);
  }
  {  // a factor without a type is linear scaling, under the current key or the old one
    for (const char* name : {"llama.rope.scaling.factor", "llama.rope.scale_linear"}) {
      auto writer = minimal_llama();
      writer.metadata().set(name, Value::f32(2.0f));
      auto bytes = writer.write_to_memory();
      HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
      EXPECT_EQ(hp.rope_scaling.type, "linear") << name;
      EXPECT_EQ(hp.rope_scaling.factor, 2.0) << name;
    }
  }
  {  // a factor of 0 is no scaling (llama.cpp's reading); a negative one is refused
    auto writer = minimal_llama();
    writer.metadata().set("llama.rope.scaling.type", Value::of_string("linear"));
    writer.metadata().set("llama.rope.scaling.factor", Value::f32(0.0f));
    auto bytes = writer.write_to_memory();
    EXPECT_EQ(read_hparams(gguf::GgufFile::parse(bytes)).rope_scaling.factor, 1.0);
    writer.metadata().set("llama.rope.scaling.factor", Value::f32(-2.0f));
    bytes = writer.write_to_memory();
    EXPECT_THROW(read_hparams(gguf::GgufFile::parse(bytes)), Error);
  }
  {  // hostile YaRN values fail with the key's name
    auto writer = minimal_llama();
    writer.metadata().set("llama.rope.scaling.type", Value::of_string("yarn"));
    writer.metadata().set("llama.rope.scaling.attn_factor", Value::f32(-1.0f));
    auto bytes = writer.write_to_memory();
    try {
      read_hparams(gguf::GgufFile::parse(bytes));
      ADD_FAILURE() << "a negative attention factor was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rope.scaling.attn_factor"), std::string::npos) << e.what();
    }
  }
}

// The error read_hparams gives for a rope.scaling.type ("" when it accepts it).
std::string scaling_type_error(const char* type) {
  auto writer = minimal_llama();
  writer.metadata().set("llama.rope.scaling.type", Value::of_string(type));
  writer.metadata().set("llama.rope.scaling.factor", Value::f32(8.0f));
  auto bytes = writer.write_to_memory();
  try {
    read_hparams(gguf::GgufFile::parse(bytes));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HParams, RopeScalingTypesOutsideTheSupportedOnesAreRefusedWithTheReason) {
  for (const char* type : {"none", "linear", "yarn", "llama3"}) EXPECT_EQ(scaling_type_error(type), "") << type;
  // Dynamic NTK: the message says why (cached keys would need re-rotating) and what to use.
  const std::string dynamic = scaling_type_error("dynamic");
  EXPECT_NE(dynamic.find("llama.rope.scaling.type 'dynamic'"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("cached key"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("rope.freq_base"), std::string::npos) << dynamic;
  for (const char* type : {"longrope", "su"}) {
    const std::string longrope = scaling_type_error(type);
    EXPECT_NE(longrope.find("LongRoPE"), std::string::npos) << longrope;
  }
  const std::string other = scaling_type_error("ntk-by-parts");
  EXPECT_NE(other.find("'ntk-by-parts' is not supported (supported: none, linear, yarn"), std::string::npos) << other;
}

TEST(HParams, ReadsTheSlidingWindowPatternAsAPeriodOrPerLayerFlags) {
  auto period = minimal_llama();
  period.metadata().set("llama.attention.sliding_window_pattern", Value::u32(4));
  auto bytes = period.write_to_memory();
  HParams hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_EQ(hp.sliding_window_period, std::optional<uint64_t>(4));
  EXPECT_TRUE(hp.sliding_window_layers.empty());

  auto flags = minimal_llama();
  flags.metadata().set("llama.attention.sliding_window_pattern", bool_array({true, false}));
  flags.metadata().set("llama.rope.freq_base_swa", Value::f32(10000.0f));
  bytes = flags.write_to_memory();
  hp = read_hparams(gguf::GgufFile::parse(bytes));
  EXPECT_FALSE(hp.sliding_window_period.has_value());
  EXPECT_EQ(hp.sliding_window_layers, (std::vector<bool>{true, false}));
  EXPECT_EQ(hp.rope_freq_base_local, 10000.0);
}

TEST(HParams, BadHeadCountsAreErrors) {
  auto writer = minimal_llama();
  writer.metadata().set("llama.attention.head_count_kv", Value::u32(3));
  auto bytes = writer.write_to_memory();
  EXPECT_THROW(read_hparams(gguf::GgufFile::parse(bytes)), Error);
  auto missing = minimal_llama();
  missing.metadata().erase("llama.block_count");
  auto missing_bytes = missing.write_to_memory();
  try {
    read_hparams(gguf::GgufFile::parse(missing_bytes));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama.block_count"), std::string::npos);
  }
}

}  // namespace
}  // namespace lumen::model
