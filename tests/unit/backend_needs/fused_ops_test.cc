// The transformer's fused ops: the residual adds with the norm after them (add_rms_norm: the FFN's
// norm, and the next layer's attention norm) and the rope of Q and K with the K/V store
// (rope_store_kv) on a backend that declares them, the plain ops (add then
// rms_norm; rope, rope, store_kv) on one that does not (the CPU with set_composed_ops, as the
// CUDA backend runs by default). Both paths must give the same logits bit for bit, and each must
// really be the one taken (the ops a pass runs are counted).
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/single_sequence_forward.h"
#include "lumen_testdata.h"
#include "model/synth.h"

namespace lumen::testing {
namespace {

using backend::OpKind;

class OpCounts final : public backend::OpObserver {
 public:
  void before_op(const backend::OpCall& call) override { ++counts[static_cast<size_t>(call.kind)]; }
  int64_t of(OpKind kind) const { return counts[static_cast<size_t>(kind)]; }
  std::array<int64_t, backend::kOpKindCount> counts{};
};

struct Pass {
  std::vector<float> logits;
  OpCounts ops;
};

// A 24-token prompt in one pass (rows split over the pool), then 4 tokens one by one.
Pass teacher_forced(engine::LoadedModel& model, backend::CpuBackend& cpu, bool plain) {
  cpu.set_composed_ops(plain);
  Pass pass;
  cpu.add_observer(&pass.ops);
  engine::SingleSequenceForward forward(model, cpu, 64);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 28; ++i) tokens.push_back(200 + (i * 131) % 30000);
  std::vector<float> step;
  forward.feed_all_logits(std::span(tokens).first(24), pass.logits);
  for (size_t i = 24; i < tokens.size(); ++i) {
    forward.feed_all_logits(std::span(tokens).subspan(i, 1), step);
    pass.logits.insert(pass.logits.end(), step.begin(), step.end());
  }
  cpu.remove_observer(&pass.ops);
  cpu.set_composed_ops(false);
  return pass;
}

TEST(FusedOps, SameLogitsBitForBitWithAndWithoutThem) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lumen_fused_add_norm_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  model::SynthOptions options;
  options.preset = "llama3-mini";
  options.type = tensor::DType::Q4_1;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.seed = 11;
  options.block_count = 3;
  options.threads = 2;
  model::write_synthetic_model(options, path);
  backend::CpuBackend cpu(2);
  {
    engine::LoadedModel model = engine::LoadedModel::load(path, cpu);
    const Pass fused = teacher_forced(model, cpu, false);
    const Pass plain = teacher_forced(model, cpu, true);
    ASSERT_EQ(fused.logits.size(), plain.logits.size());
    ASSERT_FALSE(fused.logits.empty());
    EXPECT_EQ(std::memcmp(fused.logits.data(), plain.logits.data(), fused.logits.size() * sizeof(float)), 0)
        << "the fused path's logits differ from the plain path's";
    // At least 5 forward passes of 3 layers. Per pass: one rope_store_kv per layer in place of
    // two ropes and a store; one fused add and norm per layer (the FFN's) and one per layer
    // boundary (a layer's last residual add with the next layer's attention norm), each in place
    // of one add and one norm.
    const int64_t rope_stores = fused.ops.of(OpKind::RopeStoreKv);
    EXPECT_GE(rope_stores, 15);
    ASSERT_EQ(rope_stores % 3, 0);
    const int64_t passes = rope_stores / 3;
    const int64_t fused_calls = fused.ops.of(OpKind::AddRmsNorm);
    EXPECT_EQ(fused_calls, passes * (3 + 2));
    EXPECT_EQ(plain.ops.of(OpKind::AddRmsNorm), 0);
    EXPECT_EQ(plain.ops.of(OpKind::Add), fused.ops.of(OpKind::Add) + fused_calls);
    EXPECT_EQ(plain.ops.of(OpKind::RmsNorm), fused.ops.of(OpKind::RmsNorm) + fused_calls);
    EXPECT_EQ(plain.ops.of(OpKind::Matmul), fused.ops.of(OpKind::Matmul));
    EXPECT_EQ(fused.ops.of(OpKind::Rope) + fused.ops.of(OpKind::StoreKv), 0);
    EXPECT_EQ(plain.ops.of(OpKind::RopeStoreKv), 0);
    EXPECT_EQ(plain.ops.of(OpKind::Rope), 2 * rope_stores);
    EXPECT_EQ(plain.ops.of(OpKind::StoreKv), rope_stores);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lumen::testing
