// The per-tensor type rules of `lumen quantize` (quantize/tensor_type_rules.h) on made-up
// models: which tensors may be quantized, the mixes' layer patterns, the row-size fallbacks and
// the overrides. The same rules on real files are compared with llama-quantize's output by
// tests/python/test_cli_quantize.py; these pin down the cases those files do not reach (70B,
// mixtures of experts, names without a layer).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quantize/tensor_category.h"
#include "quantize/tensor_type_rules.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

using tensor::DType;

const std::vector<int64_t> kMatrix = {512, 512};  // whole blocks of every type

ModelFacts dense_model(int64_t layers) {
  ModelFacts facts;
  facts.architecture = "llama";
  facts.n_layer = layers;
  facts.n_gqa = 1;
  facts.n_attention_v = static_cast<int>(layers);
  return facts;
}

TypeChoiceOptions mix(Mix m) {
  TypeChoiceOptions options;
  options.mix = m;
  return options;
}

std::string layer_name(int layer, const char* role) {
  return "blk." + std::to_string(layer) + "." + role + ".weight";
}

// The types a mix gives one role's tensor in every layer, in layer order.
std::vector<DType> per_layer(TensorTypePlanner& planner, int64_t layers, const char* role) {
  std::vector<DType> types;
  for (int i = 0; i < layers; ++i) {
    types.push_back(planner.choose(layer_name(i, role), DType::F16, kMatrix));
  }
  return types;
}

TEST(TensorCategory, WhatMayBeQuantized) {
  EXPECT_TRUE(allows_quantization("blk.0.attn_q.weight", kMatrix));
  EXPECT_FALSE(allows_quantization("blk.0.attn_norm.weight", kMatrix));
  EXPECT_FALSE(allows_quantization("blk.0.attn_q.bias", kMatrix));
  EXPECT_FALSE(allows_quantization("blk.0.attn_q.weight", std::vector<int64_t>{512}));
  EXPECT_FALSE(allows_quantization("blk.0.attn_q.weight", std::vector<int64_t>{512, 1}));  // 1-D really
  EXPECT_FALSE(allows_quantization("blk.0.ffn_gate_inp.weight", kMatrix));  // the router
  EXPECT_FALSE(allows_quantization("position_embd.weight", kMatrix));
  EXPECT_TRUE(allows_quantization("blk.0.ffn_down_exps.weight", std::vector<int64_t>{512, 512, 8}));
  EXPECT_EQ(tensor_category("blk.3.attn_qkv.weight"), TensorCategory::AttentionQkv);
  EXPECT_EQ(tensor_category("blk.3.ffn_down_shexp.weight"), TensorCategory::FfnDown);
  EXPECT_EQ(tensor_category("token_embd.weight"), TensorCategory::TokenEmbedding);
}

TEST(TensorTypeRules, Q4KMGivesMoreBitsToTheEndsAndEveryThirdLayer) {
  TensorTypePlanner planner(dense_model(32), mix(Mix::Q4_K_M));
  // Layers < 4, >= 28, and 4 + 3k + 2: 6, 9, ... 27.
  std::vector<DType> expected(32, DType::Q4_K);
  for (int i : {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}) {
    expected[static_cast<size_t>(i)] = DType::Q6_K;
  }
  EXPECT_EQ(per_layer(planner, 32, "attn_v"), expected);
  EXPECT_EQ(per_layer(planner, 32, "ffn_down"), expected);
  EXPECT_EQ(per_layer(planner, 32, "attn_q"), std::vector<DType>(32, DType::Q4_K));
  EXPECT_EQ(planner.choose("blk.0.attn_norm.weight", DType::F32, std::vector<int64_t>{512}), DType::F32);
  // Tied embeddings (no output.weight): token_embd is the output, so Q6_K.
  EXPECT_EQ(planner.choose("token_embd.weight", DType::F16, kMatrix), DType::Q6_K);
}

TEST(TensorTypeRules, Q3KMAndQ3KL) {
  TensorTypePlanner medium(dense_model(16), mix(Mix::Q3_K_M));
  std::vector<DType> v(16, DType::Q4_K);
  v[0] = v[1] = DType::Q5_K;  // the first two attention V
  EXPECT_EQ(per_layer(medium, 16, "attn_v"), v);
  std::vector<DType> down(16, DType::Q4_K);
  down[0] = DType::Q5_K;  // layers < 16 / 16
  EXPECT_EQ(per_layer(medium, 16, "ffn_down"), down);
  EXPECT_EQ(medium.choose("blk.0.attn_output.weight", DType::F16, kMatrix), DType::Q4_K);
  TensorTypePlanner large(dense_model(16), mix(Mix::Q3_K_L));
  EXPECT_EQ(per_layer(large, 16, "attn_v"), std::vector<DType>(16, DType::Q5_K));
  EXPECT_EQ(large.choose("blk.0.attn_output.weight", DType::F16, kMatrix), DType::Q5_K);
}

TEST(TensorTypeRules, Q2KDependsOnGroupedQueryAttention) {
  ModelFacts gqa = dense_model(8);
  gqa.n_gqa = 4;
  TensorTypePlanner grouped(gqa, mix(Mix::Q2_K));
  EXPECT_EQ(grouped.choose("blk.0.attn_v.weight", DType::F16, kMatrix), DType::Q4_K);
  TensorTypePlanner plain(dense_model(8), mix(Mix::Q2_K));
  EXPECT_EQ(plain.choose("blk.0.attn_v.weight", DType::F16, kMatrix), DType::Q3_K);
  EXPECT_EQ(plain.choose("blk.0.ffn_down.weight", DType::F16, kMatrix), DType::Q3_K);
  EXPECT_EQ(plain.choose("blk.0.ffn_up.weight", DType::F16, kMatrix), DType::Q2_K);
}

TEST(TensorTypeRules, SeventyBAndEightExperts) {
  ModelFacts big = dense_model(80);
  big.is_70b = true;
  TensorTypePlanner planner(big, mix(Mix::Q3_K_M));
  per_layer(planner, 2, "attn_v");  // the first two are Q5_K anyway
  EXPECT_EQ(planner.choose("blk.2.attn_v.weight", DType::F16, kMatrix), DType::Q5_K);  // not Q4_K

  ModelFacts moe = dense_model(16);
  moe.n_expert = 8;
  TensorTypePlanner experts(moe, mix(Mix::Q4_K_S));
  EXPECT_EQ(experts.choose("blk.1.attn_v.weight", DType::F16, kMatrix), DType::Q8_0);
  EXPECT_EQ(experts.choose("blk.1.attn_k.weight", DType::F16, kMatrix), DType::Q8_0);
  EXPECT_EQ(experts.choose("blk.1.attn_output.weight", DType::F16, kMatrix), DType::Q5_K);
  // The layer of an expert tensor comes from its name, not from a running count.
  EXPECT_EQ(experts.choose("blk.0.ffn_down_exps.weight", DType::F16, kMatrix), DType::Q5_K);
  EXPECT_EQ(experts.choose("blk.3.ffn_down_exps.weight", DType::F16, kMatrix), DType::Q4_K);
  EXPECT_THROW(experts.choose("blk.99.ffn_down_exps.weight", DType::F16, kMatrix), Error);
  EXPECT_THROW(experts.choose("extra.ffn_up_exps.weight", DType::F16, kMatrix), Error);
}

TEST(TensorTypeRules, RowsThatAreNotWholeBlocksFallBack) {
  TensorTypePlanner planner(dense_model(8), mix(Mix::Q4_K_S));
  const std::vector<int64_t> rows_576 = {576, 64};
  const std::vector<int64_t> rows_100 = {100, 64};
  EXPECT_EQ(planner.choose("blk.5.attn_q.weight", DType::F16, rows_576), DType::Q5_0);
  EXPECT_EQ(planner.choose("blk.5.attn_k.weight", DType::F16, rows_100), DType::F16);
  EXPECT_EQ(planner.choose("output.weight", DType::F16, rows_576), DType::Q8_0);
  EXPECT_EQ(planner.fallbacks().size(), 2u);  // the output's Q8_0 is a rule, not a fallback
  TensorTypePlanner legacy(dense_model(8), mix(Mix::Q4_0));
  EXPECT_EQ(legacy.choose("blk.0.attn_q.weight", DType::F16, rows_100), DType::F16);
  EXPECT_EQ(legacy.choose("output.weight", DType::F16, kMatrix), DType::Q6_K);
}

TEST(TensorTypeRules, PureAndOverrides) {
  TypeChoiceOptions options = mix(Mix::Q4_K_M);
  options.pure = true;
  options.token_embedding_type = DType::Q8_0;
  options.output_tensor_type = DType::F16;
  ModelFacts untied = dense_model(8);
  untied.tied_embeddings = false;
  TensorTypePlanner planner(untied, options);
  EXPECT_EQ(per_layer(planner, 8, "attn_v"), std::vector<DType>(8, DType::Q4_K));
  EXPECT_EQ(planner.choose("token_embd.weight", DType::F16, kMatrix), DType::Q8_0);
  EXPECT_EQ(planner.choose("output.weight", DType::F16, kMatrix), DType::F16);
  // Plain types: no rules at all.
  TensorTypePlanner f16(untied, mix(Mix::BF16));
  EXPECT_EQ(f16.choose("output.weight", DType::F32, kMatrix), DType::BF16);
  EXPECT_EQ(f16.choose("output_norm.weight", DType::F32, std::vector<int64_t>{512}), DType::F32);
}

}  // namespace
}  // namespace lumen::quantize

namespace lumen::quantize {
namespace {

// With an importance matrix, Q4_0 and Q5_0 give the first eighth of FFN down the offset
// variant (llama.cpp: steadier there); without one the files stay as they always were.
TEST(TensorTypeRules, ImatrixGivesTheFirstEighthOfFfnDownAnOffset) {
  const int64_t layers = 16;
  TypeChoiceOptions with = mix(Mix::Q4_0);
  with.has_imatrix = true;
  TensorTypePlanner q4(dense_model(layers), with);
  const std::vector<DType> q4_down = per_layer(q4, layers, "ffn_down");
  EXPECT_EQ(q4_down[0], DType::Q4_1);
  EXPECT_EQ(q4_down[1], DType::Q4_1);
  for (int i = 2; i < layers; ++i) EXPECT_EQ(q4_down[static_cast<size_t>(i)], DType::Q4_0) << i;
  EXPECT_EQ(per_layer(q4, layers, "ffn_up"), std::vector<DType>(layers, DType::Q4_0));

  with.mix = Mix::Q5_0;
  TensorTypePlanner q5(dense_model(layers), with);
  EXPECT_EQ(per_layer(q5, layers, "ffn_down")[1], DType::Q5_1);
  TensorTypePlanner plain(dense_model(layers), mix(Mix::Q4_0));
  EXPECT_EQ(per_layer(plain, layers, "ffn_down"), std::vector<DType>(layers, DType::Q4_0));
}

// IQ4_NL and IQ4_XS as llama-quantize mixes them (checked tensor for tensor against llama-quantize
// on SmolLM2, a llama-1b shape with 4 query heads a KV head, and mixtral-mini, 2026-12-01; the
// SmolLM2 files are tests/python/test_iq4_models.py's golden).
TEST(TensorTypeRules, Iq4MixesKeepMoreBitsWhereLlamaQuantizeDoes) {
  const int64_t layers = 16;
  for (const Mix m : {Mix::IQ4_NL, Mix::IQ4_XS}) {
    const DType base = m == Mix::IQ4_NL ? DType::IQ4_NL : DType::IQ4_XS;
    ModelFacts gqa = dense_model(layers);
    gqa.n_gqa = 4;
    TensorTypePlanner grouped(gqa, mix(m));
    EXPECT_EQ(per_layer(grouped, layers, "attn_v"), std::vector<DType>(layers, DType::Q5_K));
    TensorTypePlanner plain(dense_model(layers), mix(m));
    EXPECT_EQ(per_layer(plain, layers, "attn_v"), std::vector<DType>(layers, base));
    // The first eighth of FFN down, without an importance matrix only.
    const std::vector<DType> down = per_layer(plain, layers, "ffn_down");
    for (int i = 0; i < layers; ++i) EXPECT_EQ(down[static_cast<size_t>(i)], i < 2 ? DType::Q5_K : base) << i;
    TypeChoiceOptions with = mix(m);
    with.has_imatrix = true;
    TensorTypePlanner weighted(dense_model(layers), with);
    EXPECT_EQ(per_layer(weighted, layers, "ffn_down"), std::vector<DType>(layers, base));
    EXPECT_EQ(plain.choose("output.weight", DType::F16, kMatrix), DType::Q6_K);
    ModelFacts moe = dense_model(layers);
    moe.n_expert = 8;
    TensorTypePlanner experts(moe, mix(m));
    EXPECT_EQ(experts.choose("blk.1.attn_output.weight", DType::F16, kMatrix), DType::Q5_K);
  }
  // IQ4_XS rows that are not whole 256-value super-blocks take IQ4_NL, as SmolLM2's 576-wide ones.
  TensorTypePlanner planner(dense_model(8), mix(Mix::IQ4_XS));
  EXPECT_EQ(planner.choose("blk.5.attn_q.weight", DType::F16, std::vector<int64_t>{576, 64}), DType::IQ4_NL);
  EXPECT_EQ(planner.fallbacks().size(), 1u);
}

}  // namespace
}  // namespace lumen::quantize
