// The capability queries and their one message (Backend::unsupported, Backend::require), on a
// test backend that declares less than the CPU: for each optional feature, weight type, KV
// cache type and the attention head width, what is missing is named, and nothing else is.
#include <gtest/gtest.h>

#include <string>

#include "backend/cpu/cpu_backend.h"
#include "limited_backend.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

using backend::BackendFeature;
using backend::BackendNeeds;
using tensor::DType;

LimitedSupport without(BackendFeature f) {
  LimitedSupport s = everything();
  s.features.erase(f);
  return s;
}

std::string refusal(const backend::Backend& b, const BackendNeeds& needs) {
  try {
    b.require(needs, "the test model");
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(BackendNeeds, EachMissingFeatureIsNamedAndOnlyIt) {
  for (BackendFeature f : backend::kAllBackendFeatures) {
    const LimitedBackend b(without(f));
    BackendNeeds all;
    for (BackendFeature g : backend::kAllBackendFeatures) all.add(g);
    const std::vector<std::string> missing = b.unsupported(all);
    ASSERT_EQ(missing.size(), 1u) << backend::backend_feature_name(f);
    EXPECT_EQ(missing[0], backend::backend_feature_name(f));
    EXPECT_FALSE(b.supports(f));

    BackendNeeds others;
    for (BackendFeature g : backend::kAllBackendFeatures) {
      if (g != f) others.add(g);
    }
    EXPECT_TRUE(b.unsupported(others).empty()) << backend::backend_feature_name(f);
    EXPECT_NO_THROW(b.require(others, "the test model"));
    const std::string message = refusal(b, all);
    EXPECT_NE(message.find(std::string(backend::backend_feature_name(f))), std::string::npos) << message;
    EXPECT_NE(message.find("the test model needs"), std::string::npos) << message;
    EXPECT_NE(message.find("the limited backend"), std::string::npos) << message;
    EXPECT_NE(message.find("--device cpu"), std::string::npos) << message;
  }
}

// A backend without RWKV 7's feature refuses its op by name before reading an argument (the
// limited backend runs no op, so a refusal from inside one would read differently), and one
// with the feature gets as far as the argument checks.
TEST(BackendNeeds, RwkvWkv7IsRefusedWithoutItsFeature) {
  const backend::Wkv7Rows rows{};
  backend::TensorView out{};
  LimitedBackend lacking(without(BackendFeature::Rwkv7));
  EXPECT_FALSE(lacking.has_op(backend::OpKind::RwkvWkv7));
  try {
    lacking.rwkv_wkv7(rows, 64, {}, out);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "rwkv_wkv7 (RWKV 7's state update) is not supported on the limited backend yet; use --device cpu");
  }
  LimitedBackend full(everything());
  EXPECT_TRUE(full.has_op(backend::OpKind::RwkvWkv7));
  EXPECT_THROW(full.rwkv_wkv7(rows, 64, {}, out), Error);  // empty rows: the checks refuse them
}

TEST(BackendNeeds, TreeAttentionQueryFollowsTheFeature) {
  EXPECT_FALSE(LimitedBackend(without(BackendFeature::TreeAttention)).supports_tree_attention());
  EXPECT_TRUE(LimitedBackend(everything()).supports_tree_attention());
}

TEST(BackendNeeds, EachMissingWeightTypeIsNamed) {
  // Gemma 3's Q4_K_M file mixes these (the CUDA backend once stopped at the first Q5_0 get_rows).
  const DType q4_k_m[] = {DType::F32, DType::Q4_K, DType::Q5_0, DType::Q6_K, DType::Q8_0};
  for (DType lacking : q4_k_m) {
    LimitedSupport s = everything();
    s.weight_types.erase(lacking);
    const LimitedBackend b(s);
    BackendNeeds needs;
    for (DType t : q4_k_m) needs.add_weight_type(t);
    needs.add_weight_type(DType::Q4_K);  // once, however many tensors use it
    EXPECT_EQ(needs.weight_types.size(), std::size(q4_k_m));
    const std::vector<std::string> missing = b.unsupported(needs);
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(missing[0], std::string(tensor::dtype_name(lacking)) + " weights");
  }
}

TEST(BackendNeeds, EachMissingKvTypeIsNamed) {
  for (DType lacking : {DType::F16, DType::F32, DType::BF16, DType::Q8_0, DType::Q4_0, DType::FP8_E4M3}) {
    LimitedSupport s = everything();
    s.kv_types.erase(lacking);
    const LimitedBackend b(s);
    BackendNeeds needs;
    needs.add_kv_type(lacking);
    const std::vector<std::string> missing = b.unsupported(needs);
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(missing[0], "a " + std::string(tensor::dtype_name(lacking)) + " KV cache");
    EXPECT_FALSE(b.supports_kv_type(lacking));
  }
}

TEST(BackendNeeds, HeadsWiderThanTheKernelsTakeAreNamed) {
  LimitedSupport s = everything();
  s.max_head_dim = 256;
  const LimitedBackend b(s);
  BackendNeeds needs;
  needs.attention_head_dim = 256;
  EXPECT_TRUE(b.unsupported(needs).empty());
  needs.attention_head_dim = 576;  // DeepSeek-V2's latent row: rank 512 + rope 64
  const std::vector<std::string> missing = b.unsupported(needs);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "attention heads of 576 values (at most 256 here)");
}

// A latent cache's rows (values a view of the keys) are held to the backend's latent limit, which
// may be wider than its other heads' (CUDA: 576 against 256); other models' heads are not.
TEST(BackendNeeds, LatentRowsAreHeldToTheLatentLimit) {
  LimitedSupport s = everything();
  s.max_head_dim = 256;
  s.max_latent_head_dim = 576;
  const LimitedBackend b(s);
  BackendNeeds latent;
  latent.add(BackendFeature::LatentAttention);
  latent.attention_head_dim = 576;
  EXPECT_TRUE(b.unsupported(latent).empty());
  latent.attention_head_dim = 640;
  ASSERT_EQ(b.unsupported(latent).size(), 1u);
  EXPECT_EQ(b.unsupported(latent)[0], "attention heads of 640 values (at most 576 here)");
  BackendNeeds plain;
  plain.attention_head_dim = 576;
  ASSERT_EQ(b.unsupported(plain).size(), 1u);
  EXPECT_EQ(b.unsupported(plain)[0], "attention heads of 576 values (at most 256 here)");
}

TEST(BackendNeeds, EverythingMissingIsNamedInOneMessage) {
  LimitedSupport s = everything();
  s.features.erase(BackendFeature::MoeFfn);
  s.features.erase(BackendFeature::LatentAttention);
  s.weight_types.erase(DType::Q5_0);
  const LimitedBackend b(s);
  BackendNeeds needs;
  needs.add(BackendFeature::MoeFfn);
  needs.add(BackendFeature::LatentAttention);
  needs.add_weight_type(DType::Q5_0);
  needs.add_weight_type(DType::Q8_0);
  EXPECT_EQ(refusal(b, needs),
            "the test model needs a mixture-of-experts FFN (moe_ffn), multi-head latent attention (values read from "
            "the keys' cache rows) and Q5_0 weights, which the limited backend does not run yet; use --device cpu");
}

// The CPU backend, the reference, runs everything the file format and the engine's options ask.
TEST(BackendNeeds, TheCpuBackendRunsEverything) {
  backend::CpuBackend cpu(1);
  for (BackendFeature f : backend::kAllBackendFeatures)
    EXPECT_TRUE(cpu.supports(f)) << backend::backend_feature_name(f);
  const LimitedSupport all = everything();
  for (DType t : all.weight_types) EXPECT_TRUE(cpu.supports_weight_type(t)) << tensor::dtype_name(t);
  for (DType t : all.kv_types) EXPECT_TRUE(cpu.supports_kv_type(t)) << tensor::dtype_name(t);
  EXPECT_EQ(cpu.max_attention_head_dim(), 0);
}

}  // namespace
}  // namespace lumen::testing
