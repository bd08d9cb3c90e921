// The profiler on a two-layer synthetic model of SmolLM2's shapes: every op lands in its layer,
// and the matmuls' bytes and FLOPs per step equal what the file's weights and the batch's
// activations add up to, worked out here from the tensors and hyperparameters.
#include "profile/profile_run.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>

#include "lumen_testdata.h"
#include "model/synth.h"
#include "profile/machine_ceilings.h"

namespace lumen::profile {
namespace {

class ProfileRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::have_testdata()) return;
    path_ = new std::string(
        (std::filesystem::temp_directory_path() / ("lumen_profile_" + std::to_string(::getpid()) + ".gguf")).string());
    model::SynthOptions options;
    options.preset = "smollm2-135m";
    options.type = tensor::DType::Q8_0;
    options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
    options.block_count = 2;
    options.threads = 2;
    model::write_synthetic_model(options, *path_);
  }
  static void TearDownTestSuite() {
    if (path_ != nullptr) std::filesystem::remove(*path_);
    delete path_;
    path_ = nullptr;
  }
  void SetUp() override {
    if (!testing::have_testdata()) GTEST_SKIP() << "shared test data not found";
  }
  static std::string* path_;
};
std::string* ProfileRunTest::path_ = nullptr;

const Totals* find(const std::vector<Totals>& list, const std::string& name) {
  for (const Totals& t : list) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST_F(ProfileRunTest, MatmulBytesAndFlopsAddUpToTheWeightsAndActivations) {
  ProfileRun run(*path_, 2);
  const StepShape shape{true, 3, 1, 20};  // three sequences decoding after 20 cached tokens
  const ShapeProfile p = run.profile(shape, 2);
  const StepBreakdown& b = p.breakdown;

  const auto& hp = run.model().hparams;
  const double n = 3, E = static_cast<double>(hp.embedding_length), F = static_cast<double>(hp.feed_forward_length);
  const double kv = static_cast<double>(hp.head_count_kv * hp.head_dim), vocab = static_cast<double>(hp.vocab_size);
  double weight_bytes = 0, weight_macs = 0;
  bool untied = false;
  for (const gguf::TensorInfo& t : run.model().file->tensors()) untied = untied || t.name == "output.weight";
  const std::regex layer_matrix(R"(blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight)");
  for (const gguf::TensorInfo& t : run.model().file->tensors()) {
    const bool head = t.name == (untied ? "output.weight" : "token_embd.weight");
    if (head || std::regex_match(t.name, layer_matrix)) {
      weight_bytes += static_cast<double>(t.bytes);
      weight_macs += static_cast<double>(t.elements);
    }
  }
  // Per layer: x in and q, k, v out; x in and out for attn_output; x in, gate and up out;
  // FFN in and x out for ffn_down. The head: the three sampled rows in, their logits out.
  const double per_layer = n * 4 * ((E + E + 2 * kv) + (E + E) + (E + 2 * F) + (F + E));
  const double activations = 2 * per_layer + n * 4 * (E + vocab);

  double matmul_bytes = 0, matmul_flops = 0;
  int matmul_ops = 0;
  for (const Totals& t : b.by_op) {
    if (t.name.starts_with("matmul")) {
      matmul_bytes += t.cost.bytes;
      matmul_flops += t.cost.flops;
      matmul_ops += static_cast<int>(t.calls);
      EXPECT_TRUE(t.cost.int8) << t.name;  // Q8_0 weights
    }
  }
  EXPECT_DOUBLE_EQ(matmul_bytes, weight_bytes + activations);
  EXPECT_DOUBLE_EQ(matmul_flops, 2 * n * weight_macs + 2 * 5.0 * n * F);  // the SwiGLU inside
  EXPECT_EQ(matmul_ops, 2 * 4 + 1);  // per layer: QKV, attention output, gate+up, down; the head

  // The ops are named by their weights, and each layer runs one of each.
  for (const char* name : {"matmul attn_q+attn_k+attn_v", "matmul attn_output", "matmul_swiglu ffn_gate+ffn_up",
                           "matmul ffn_down", "attention", "rope_store_kv"}) {
    const Totals* t = find(b.by_op, name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->calls, 2) << name;
  }
  ASSERT_NE(find(b.by_op, untied ? "matmul output" : "matmul output (tied token_embd)"), nullptr);
  std::vector<std::string> parts;
  for (const Totals& t : b.by_part) parts.push_back(t.name);
  EXPECT_EQ(parts, (std::vector<std::string>{"embedding", "layer 0", "layer 1", "head"}));
  const Totals* layer1_attention = find(b.by_op_in_part, "layer 1: attention");
  ASSERT_NE(layer1_attention, nullptr);
  // Three sequences, each reading its 21 positions of K and V (f16) once.
  EXPECT_DOUBLE_EQ(layer1_attention->cost.bytes,
                   3 * 21 * 2 * kv * 2 + 2 * n * static_cast<double>(hp.head_count * hp.head_dim) * 4);

  // Times: the ops fit inside the step; both workers ran tasks; the timeline kept the last step.
  EXPECT_GT(b.step_ns, 0);
  EXPECT_LE(b.op_ns, b.step_ns);
  EXPECT_LE(b.parallel_ns, b.step_ns);
  ASSERT_EQ(b.threads.size(), 2u);
  EXPECT_GT(b.threads[0].task_ns, 0);
  EXPECT_GT(b.threads[1].task_ns, 0);
  EXPECT_GT(p.unrecorded_step_ns, 0);
  int64_t calls = 0;
  for (const Totals& t : b.by_op) calls += t.calls;
  EXPECT_EQ(static_cast<int64_t>(p.last.ops.size()), calls);
  EXPECT_FALSE(p.last.spans.empty());
}

TEST_F(ProfileRunTest, VerificationStepTakesLogitsAtEveryRowAndReadsOneSequencesKv) {
  ProfileRun run(*path_, 2);
  const StepShape shape{true, 1, 6, 20, true};  // one sequence: its last token and 5 drafts
  EXPECT_EQ(shape.label(), "verify 6 rows at context 20");
  const ShapeProfile p = run.profile(shape, 1);
  const auto& hp = run.model().hparams;
  const double E = static_cast<double>(hp.embedding_length), vocab = static_cast<double>(hp.vocab_size);
  const double kv = static_cast<double>(hp.head_count_kv * hp.head_dim);
  bool untied = false;
  double head_bytes = 0;
  for (const gguf::TensorInfo& t : run.model().file->tensors()) untied = untied || t.name == "output.weight";
  for (const gguf::TensorInfo& t : run.model().file->tensors()) {
    if (t.name == (untied ? "output.weight" : "token_embd.weight")) head_bytes = static_cast<double>(t.bytes);
  }
  // The head scores all six rows: their activations in, six rows of logits out.
  const Totals* head = find(p.breakdown.by_op, untied ? "matmul output" : "matmul output (tied token_embd)");
  ASSERT_NE(head, nullptr);
  EXPECT_DOUBLE_EQ(head->cost.bytes, head_bytes + 6 * 4 * (E + vocab));
  // Attention reads the sequence's 26 positions of K and V once for all six rows.
  const Totals* attention = find(p.breakdown.by_op_in_part, "layer 0: attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_DOUBLE_EQ(attention->cost.bytes,
                   26 * 2 * kv * 2 + 2 * 6 * static_cast<double>(hp.head_count * hp.head_dim) * 4);
}

TEST_F(ProfileRunTest, PrefillRunsEveryLayerAndRefusesShapesThatDoNotFit) {
  ProfileRun run(*path_, 1);
  const ShapeProfile p = run.profile(StepShape{false, 1, 40, 0}, 1);
  const Totals* qkv = find(p.breakdown.by_op, "matmul attn_q+attn_k+attn_v");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->calls, 2);
  // One thread: one worker row, busy for the parallel loops it ran inline.
  ASSERT_EQ(p.breakdown.threads.size(), 1u);
  EXPECT_GT(p.breakdown.threads[0].task_ns, 0);
  EXPECT_THROW(run.profile(StepShape{true, 1, 1, 1 << 30}, 1), Error);
  EXPECT_THROW(run.profile(StepShape{true, 0, 1, 10}, 1), Error);
}

// The decode bound's bytes: a MoE layer's experts count only for those a step's tokens choose
// (expected under uniform routing); the rest of the weights once a step.
TEST(WeightStream, ExpertsCountForTheShareAStepsTokensChoose) {
  const WeightStream moe{100.0, 3200.0, 32, 4};
  EXPECT_DOUBLE_EQ(moe.bytes_for(1), 100.0 + 3200.0 * 4 / 32);
  EXPECT_DOUBLE_EQ(moe.bytes_for(2), 100.0 + 3200.0 * (1.0 - (28.0 / 32) * (28.0 / 32)));
  EXPECT_NEAR(moe.bytes_for(512), 3300.0, 1e-6);
  const WeightStream dense{100.0, 0.0, 0, 0};
  EXPECT_DOUBLE_EQ(dense.bytes_for(1), 100.0);
}

// SmolLM2 ties its output to the token embedding, so every tensor is streamed (and none is an
// expert's).
TEST_F(ProfileRunTest, ADenseModelStreamsEveryTensor) {
  ProfileRun run(*path_, 1);
  double file_bytes = 0;
  for (const gguf::TensorInfo& t : run.model().file->tensors()) file_bytes += static_cast<double>(t.bytes);
  const WeightStream stream = run.weight_stream();
  EXPECT_EQ(stream.dense_bytes, file_bytes);
  EXPECT_EQ(stream.expert_bytes, 0.0);
  EXPECT_EQ(stream.bytes_for(7), file_bytes);
}

TEST(MachineCeilings, ProbesMeasureSomethingPlausible) {
  ThreadPool pool(2);
  const MachineCeilings c = measure_ceilings(pool, 64, 200'000);
  EXPECT_EQ(c.threads, 2u);
  EXPECT_FALSE(c.isa.empty());
  // Any machine this runs on streams more than 0.1 GB/s and does more than 0.1 GFLOP/s; the
  // upper bounds catch a probe whose work the compiler dropped (its time would be ~0).
  EXPECT_GT(c.read_gbps, 0.1);
  EXPECT_LT(c.read_gbps, 10000.0);
  EXPECT_GT(c.fp32_gflops, 0.1);
  EXPECT_LT(c.fp32_gflops, 100000.0);
  EXPECT_GT(c.int8_gops, 0.1);
  EXPECT_LT(c.int8_gops, 400000.0);
}

}  // namespace
}  // namespace lumen::profile
