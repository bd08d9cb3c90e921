// moe_ffn composed from a backend's own ops (common/composed_moe_ffn.h), the way the CUDA
// backend runs it, against the CPU backend's native moe_ffn, on the CPU: the MoE synth presets
// in their real shapes (experts, top-k, shared experts, DeepSeek's dense first layer) and the
// weight types they are written in. The logits of a teacher-forced pass must agree within the
// bound the MoE goldens hold a synthetic model's first positions to (rounding: 1e-3), and the
// serving engine's greedy tokens must be the same. On CUDA the composition is then as correct
// as the primitives it calls, which the conformance table checks there.
//
// The native side is also the transformer's routed path (route_experts and moe_ffn_routed, which
// the CPU declares and set_composed_ops withdraws), the composed side its host path (route_tokens
// on the logits brought back): the pass counts the router calls to show which one ran.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "engine/single_sequence_forward.h"
#include "lumen/engine.h"
#include "lumen_testdata.h"
#include "model/kv_cache.h"
#include "model/synth.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

using tensor::DType;

constexpr double kRoundingBound = 1e-3;  // tests/model/logits_golden_test.cc's kEarlyBound

struct MoeCase {
  const char* preset;
  DType type;
};

std::string name_of(const MoeCase& c) {
  std::string name = std::string(c.preset) + "_" + std::string(tensor::dtype_name(c.type));
  std::erase_if(name, [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)) && ch != '_'; });
  return name;
}

// ctest's names show the case, not its bytes.
void PrintTo(const MoeCase& c, std::ostream* os) { *os << name_of(c); }

class ComposedMoeFfn : public ::testing::TestWithParam<MoeCase> {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TESTDATA();
    path_ = (std::filesystem::temp_directory_path() /
             ("lumen_composed_moe_" + name_of(GetParam()) + "_" + std::to_string(::getpid()) + ".gguf"))
                .string();
    model::SynthOptions options;
    options.preset = GetParam().preset;
    options.type = GetParam().type;
    options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
    options.seed = 7;
    options.block_count = 2;  // DeepSeek's first layer is dense: the second has the experts
    options.threads = 2;
    model::write_synthetic_model(options, path_);
    model_ = std::make_unique<engine::LoadedModel>(engine::LoadedModel::load(path_, cpu_));
  }
  void TearDown() override {
    model_.reset();
    if (!path_.empty()) std::filesystem::remove(path_);
  }

  // Every position's logits: a 40-token prompt in one pass, then 6 tokens one by one.
  std::vector<float> teacher_forced(bool composed) {
    struct RouterCalls final : backend::OpObserver {
      void before_op(const backend::OpCall& call) override { calls += call.kind == backend::OpKind::RouteExperts; }
      int64_t calls = 0;
    } router;
    cpu_.add_observer(&router);
    cpu_.set_composed_ops(composed);
    engine::SingleSequenceForward forward(*model_, cpu_, 128);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 46; ++i) tokens.push_back(200 + (i * 131) % 30000);
    std::vector<float> logits, step;
    forward.feed_all_logits(std::span(tokens).first(40), logits);
    for (size_t i = 40; i < tokens.size(); ++i) {
      forward.feed_all_logits(std::span(tokens).subspan(i, 1), step);
      logits.insert(logits.end(), step.begin(), step.end());
    }
    cpu_.set_composed_ops(false);
    cpu_.remove_observer(&router);
    // 7 passes over the MoE layers (DeepSeek's first is dense): routed on the backend or not.
    if (composed) {
      EXPECT_EQ(router.calls, 0);
    } else {
      EXPECT_GE(router.calls, 7);
    }
    return logits;
  }

  backend::CpuBackend cpu_{2};
  std::string path_;
  std::unique_ptr<engine::LoadedModel> model_;
};

TEST_P(ComposedMoeFfn, TeacherForcedLogitsAgreeWithTheNativeOp) {
  const std::vector<float> native = teacher_forced(false);
  const std::vector<float> composed = teacher_forced(true);
  ASSERT_EQ(native.size(), composed.size());
  double worst = 0.0;
  size_t identical = 0;
  for (size_t i = 0; i < native.size(); ++i) {
    ASSERT_TRUE(std::isfinite(composed[i])) << i;
    worst = std::max(worst, static_cast<double>(std::abs(native[i] - composed[i])));
    identical += native[i] == composed[i] ? 1 : 0;
  }
  RecordProperty("max_abs_diff", std::to_string(worst));
  RecordProperty("identical", std::to_string(identical) + " of " + std::to_string(native.size()));
  EXPECT_LE(worst, kRoundingBound) << identical << " of " << native.size() << " logits identical";
}

// Several requests at once through the engine (prefills chunked beside decodes, so the experts'
// row groups mix sequences): the composed op's greedy tokens are the native op's.
TEST_P(ComposedMoeFfn, EngineGreedyTokensAreTheNativeOnes) {
  auto run = [&](bool composed) {
    cpu_.set_composed_ops(composed);
    EngineConfig config;
    config.block_size = 8;
    config.max_num_batched_tokens = 24;
    config.kv_cache_bytes = 64 * static_cast<int64_t>(model::KvCache::bytes_per_block(model_->hparams, 8));
    Engine engine(engine::borrow_model(*model_, cpu_), config);
    std::vector<RequestHandle> handles;
    for (int r = 0; r < 3; ++r) {
      std::vector<int32_t> prompt;
      for (int j = 0; j < 9 + 11 * r; ++j) prompt.push_back(300 + (r * 97 + j * 31) % 20000);
      SamplingParams p;
      p.temperature = 0.0f;
      p.max_tokens = 8;
      p.ignore_eos = true;
      handles.push_back(engine.add_request(prompt, p));
    }
    while (engine.has_unfinished()) engine.step();
    std::vector<std::vector<int32_t>> tokens;
    for (RequestHandle& h : handles) tokens.push_back(h.collect().tokens);
    cpu_.set_composed_ops(false);
    return tokens;
  };
  const auto native = run(false);
  const auto composed = run(true);
  for (size_t r = 0; r < native.size(); ++r) {
    EXPECT_EQ(native[r].size(), 8u);
    EXPECT_EQ(composed[r], native[r]) << "request " << r;
  }
}

// Every MoE preset in the goldens' type (Q4_1); other legacy and float kernels on the
// shared-expert (qwen2moe) and the widest top-k (qwen3moe) presets. (A K-quant synth MoE model
// takes 30 s to write: the conformance table's cpu_composed moe_ffn rows hold the composition
// to its reference for Q4_K instead.)
INSTANTIATE_TEST_SUITE_P(Presets, ComposedMoeFfn,
                         ::testing::Values(MoeCase{"qwen2moe-a2.7b-mini", DType::Q4_1},
                                           MoeCase{"qwen3moe-mini", DType::Q4_1}, MoeCase{"olmoe-mini", DType::Q4_1},
                                           MoeCase{"mixtral-mini", DType::Q4_1},
                                           MoeCase{"deepseek2-lite-mini", DType::Q4_1},
                                           MoeCase{"qwen2moe-a2.7b-mini", DType::Q8_0},
                                           MoeCase{"qwen3moe-mini", DType::Q5_0}, MoeCase{"qwen3moe-mini", DType::F16}),
                         [](const ::testing::TestParamInfo<MoeCase>& p) { return name_of(p.param); });

// Bad routing is refused before anything is written: out keeps what it held.
TEST(ComposedMoeFfnInput, BadRoutingIsRefusedAndChangesNothing) {
  backend::CpuBackend cpu(1);
  cpu.set_composed_ops(true);
  constexpr int64_t kIn = 32, kFf = 32, kTokens = 3;
  std::vector<float> w(kIn * kFf, 0.01f), x(kIn * kTokens, 1.0f), out(kIn * kTokens, 42.0f);
  const backend::TensorView gate = backend::f32_matrix(w.data(), kIn, kFf),
                            down = backend::f32_matrix(w.data(), kFf, kIn);
  const backend::TensorView xv = backend::f32_matrix(x.data(), kIn, kTokens);
  backend::TensorView ov = backend::f32_matrix(out.data(), kIn, kTokens);
  const std::vector<float> weights = {0.5f, 0.5f};
  struct Bad {
    std::vector<int32_t> rows, slots;
    const char* why;
  };
  const Bad cases[] = {{{0, 3}, {0, 0}, "is not in [0, 3)"},
                       {{0, 1}, {0, 2}, "slot 2 is not in [0, 2)"},
                       {{1, 1}, {1, 1}, "row 1 slot 1 is filled twice"}};
  for (const Bad& c : cases) {
    const backend::ExpertWork e{&gate, &gate, &down, c.rows, c.slots, weights};
    try {
      cpu.moe_ffn(xv, std::span(&e, 1), 2, backend::Glu::Swiglu, ov);
      ADD_FAILURE() << c.why << ": accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(c.why), std::string::npos) << error.what();
    }
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 42.0f; })) << c.why;
  }
}

}  // namespace
}  // namespace lumen::testing
