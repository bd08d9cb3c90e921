// The step boundary (backend/backend.h) on the real default model: a forward pass hands the
// backend its metadata once, at begin_step, and between begin_step and end_step nothing is
// allocated, uploaded or copied back, and every host array an op is given is the step's own
// (so a device backend finds it already on the device). Checked by an observer that records
// every op of a prefill and of decode steps on the CPU backend. And the op profiler, an
// observer, leaves the backend's capabilities and its outputs exactly what they are.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/step_scope.h"
#include "default_model_path.h"
#include "engine/loaded_model.h"
#include "lumen_testdata.h"
#include "model/kv_cache.h"
#include "profile/op_profiler.h"
#include "synth_moe_model.h"

namespace lumen {
namespace {

using backend::OpCall;
using backend::OpKind;

template <typename T>
bool inside(std::span<const T> part, std::span<const T> whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

// Records what a step does that a device backend would have to transfer or allocate for.
class StepRecorder final : public backend::OpObserver {
 public:
  int steps = 0;
  int ops_in_steps = 0;
  std::vector<std::string> violations;

  void after_op(const OpCall& call) override {
    if (call.kind == OpKind::Allocate) {
      memory_[static_cast<const uint8_t*>(const_cast<backend::Buffer*>(call.buffer)->data())] = call.bytes;
    } else if (call.kind == OpKind::UploadWeights) {
      const backend::TensorView& w = *call.result;
      memory_[static_cast<const uint8_t*>(w.data)] = w.row_bytes * static_cast<size_t>(w.rows());
    }
  }

  void before_op(const OpCall& call) override {
    if (call.kind == OpKind::BeginStep) {
      if (step_) violations.push_back("begin_step inside a step");
      step_ = *call.step;  // a copy: call.step lives only as long as the call
      ++steps;
      return;
    }
    if (!step_) return;
    if (call.kind == OpKind::EndStep) {
      step_.reset();
      return;
    }
    ++ops_in_steps;
    const std::string op(backend::op_name(call.kind));
    switch (call.kind) {
      case OpKind::Allocate:
      case OpKind::UploadWeights:
      case OpKind::CopyToHost:
      case OpKind::ReadKvBlock:
      case OpKind::WriteKvBlock: violations.push_back(op + " inside a step"); return;
      default: break;
    }
    // Index arrays: the step's tokens, positions or logit rows.
    if (!inside(call.indices, step_->tokens) && !inside(call.indices, step_->positions) &&
        !inside(call.indices, step_->logit_rows)) {
      violations.push_back(op + ": an index array that is not the step's");
    }
    if (!inside(call.seqs, step_->sequences)) violations.push_back(op + ": sequence slices that are not the step's");
    for (const backend::TensorView* t : call.in) check_tensor(op, t);
    for (const backend::TensorView* t : call.out) check_tensor(op, t);
    for (const backend::MatmulOutput& o : call.matmul_outputs) {
      check_tensor(op, o.w);
      check_tensor(op, o.y);
    }
  }

 private:
  // Memory the backend handed out (buffers, weights), or the step's logits (step_logits).
  void check_tensor(const std::string& op, const backend::TensorView* t) {
    if (t == nullptr) return;
    const auto* p = static_cast<const uint8_t*>(t->data);
    if (step_->logits != nullptr && t->data == step_->logits) return;
    auto it = memory_.upper_bound(p);
    if (it != memory_.begin() && p < std::prev(it)->first + std::prev(it)->second) return;
    violations.push_back(op + ": a tensor outside the backend's memory");
  }

  std::optional<backend::StepMetadata> step_;
  std::map<const uint8_t*, size_t> memory_;
};

struct ForwardRun {
  std::vector<std::vector<float>> logits;  // per step
};

// A prefill of 40 tokens in one step, then 6 greedy decode steps, all through forward.
ForwardRun prefill_and_decode(engine::LoadedModel& model, backend::Backend& backend) {
  constexpr int64_t kBlock = 16;
  model::KvCache cache(backend, model.hparams, 8, kBlock);
  const auto vocab = static_cast<size_t>(model.hparams.vocab_size);
  std::vector<int32_t> table(8);
  std::iota(table.begin(), table.end(), 0);
  std::vector<int32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(100 + 37 * i % 5000);
  std::vector<int32_t> pos(tokens.size());
  std::iota(pos.begin(), pos.end(), 0);
  ForwardRun run;
  int64_t start = 0;
  for (int step = 0; step < 7; ++step) {
    const auto n = static_cast<int64_t>(tokens.size());
    const backend::SequenceSlice slice{0, n, start, table};
    const int32_t last = static_cast<int32_t>(n - 1);
    std::vector<float> logits(vocab);
    model.transformer->forward({tokens, pos, std::span(&slice, 1), std::span(&last, 1)}, cache, logits.data());
    start += n;
    const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    run.logits.push_back(std::move(logits));
    tokens = {best};
    pos = {static_cast<int32_t>(start)};
  }
  return run;
}

TEST(StepBoundary, NothingIsAllocatedUploadedOrCopiedInsideAStep) {
  backend::CpuBackend cpu(2);
  StepRecorder recorder;
  cpu.add_observer(&recorder);  // before the weights: it learns the backend's memory
  engine::LoadedModel model = engine::LoadedModel::load(testing::default_model_path(), cpu);
  const ForwardRun run = prefill_and_decode(model, cpu);
  cpu.remove_observer(&recorder);
  EXPECT_EQ(recorder.steps, 7);                  // one begin_step per forward pass
  EXPECT_GT(recorder.ops_in_steps, 7 * 30 * 8);  // SmolLM2: 30 layers of 10+ ops each
  EXPECT_TRUE(recorder.violations.empty())
      << recorder.violations.size()
      << " violations, the first: " << (recorder.violations.empty() ? "" : recorder.violations.front());
  EXPECT_FALSE(cpu.in_step());
}

// A mixture-of-experts model on a backend that routes (route_experts, moe_ffn_routed): its steps
// transfer nothing either. The host path (a backend without the two ops: the CPU with
// set_composed_ops, as the CUDA backend runs by default) copies each layer's router logits back
// inside the step, and the recorder says so.
TEST(StepBoundary, AMoeModelRoutedOnTheBackendTransfersNothingInsideAStep) {
  LUMEN_REQUIRE_TESTDATA();
  const testing::SynthMoeModel file;
  backend::CpuBackend cpu(2);
  StepRecorder recorder;
  cpu.add_observer(&recorder);
  engine::LoadedModel model = engine::LoadedModel::load(file.path(), cpu);
  prefill_and_decode(model, cpu);
  EXPECT_EQ(recorder.steps, 7);
  EXPECT_TRUE(recorder.violations.empty())
      << recorder.violations.size()
      << " violations, the first: " << (recorder.violations.empty() ? "" : recorder.violations.front());

  StepRecorder host_path;
  cpu.add_observer(&host_path);
  cpu.set_composed_ops(true);
  prefill_and_decode(model, cpu);
  cpu.set_composed_ops(false);
  cpu.remove_observer(&host_path);
  cpu.remove_observer(&recorder);
  EXPECT_NE(std::find(host_path.violations.begin(), host_path.violations.end(), "copy_to_host inside a step"),
            host_path.violations.end());
}

// The recorder is what the test above relies on: each kind of transfer inside a step is caught.
TEST(StepBoundary, TheRecorderCatchesEveryTransferInsideAStep) {
  backend::CpuBackend cpu(1);
  StepRecorder recorder;
  cpu.add_observer(&recorder);
  std::unique_ptr<backend::Buffer> buffer = cpu.allocate(64 * 2 * sizeof(float));
  backend::TensorView x = backend::f32_matrix(static_cast<float*>(buffer->data()), 64, 2);
  x.dims = {64, 1, 2, 1};  // {head_dim, heads, tokens}
  const int32_t tokens[] = {5, 6};
  const int32_t positions[] = {0, 1};
  backend::StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  backend::RopeConfig rope;
  rope.rope_dims = 64;
  {
    backend::StepScope scope(cpu, step);
    cpu.rope(x, positions, rope);  // the step's own positions: fine
    EXPECT_TRUE(recorder.violations.empty());
    const int32_t other[] = {0, 1};
    cpu.rope(x, other, rope);  // an array the step did not hand over
    EXPECT_EQ(recorder.violations.size(), 1u);
    std::unique_ptr<backend::Buffer> late = cpu.allocate(16);
    std::vector<float> host(128);
    cpu.copy_to_host(x, host.data());
    backend::TensorView foreign = backend::f32_matrix(host.data(), 64, 2);
    foreign.dims = {64, 1, 2, 1};
    cpu.rope(foreign, positions, rope);  // a tensor in memory the backend never handed out
    scope.finish();
  }
  cpu.remove_observer(&recorder);
  ASSERT_EQ(recorder.violations.size(), 4u);
  EXPECT_EQ(recorder.violations[1], "allocate inside a step");
  EXPECT_EQ(recorder.violations[2], "copy_to_host inside a step");
  EXPECT_EQ(recorder.violations[3], "rope: a tensor outside the backend's memory");
}

TEST(StepBoundary, AStepThatThrowsIsAbortedAndTheNextOneRuns) {
  backend::CpuBackend cpu(1);
  backend::StepMetadata step;
  {
    backend::StepScope scope(cpu, step);
    EXPECT_TRUE(cpu.in_step());
    EXPECT_THROW(cpu.begin_step(step), Error);  // one step at a time
  }                                             // no finish(): aborted
  EXPECT_FALSE(cpu.in_step());
  EXPECT_THROW(cpu.end_step(), Error);
  const int32_t tokens[] = {1, 2};
  const int32_t positions[] = {0};
  backend::StepMetadata bad;
  bad.tokens = tokens;
  bad.positions = positions;  // one position for two tokens
  EXPECT_THROW(cpu.begin_step(bad), Error);
  EXPECT_FALSE(cpu.in_step());
}

TEST(StepBoundary, AProfiledBackendKeepsItsCapabilitiesAndOutputs) {
  backend::CpuBackend cpu(2);
  engine::LoadedModel model = engine::LoadedModel::load(testing::default_model_path(), cpu);
  const ForwardRun plain = prefill_and_decode(model, cpu);
  const bool tree = cpu.supports_tree_attention();
  profile::OpProfiler profiler(cpu, &cpu.pool());
  profiler.start_recording();
  const ForwardRun profiled = prefill_and_decode(model, cpu);
  const profile::StepRecording recording = profiler.stop_recording();
  EXPECT_TRUE(tree);
  EXPECT_EQ(cpu.supports_tree_attention(), tree);
  EXPECT_TRUE(cpu.supports_kv_type(tensor::DType::Q8_0));
  EXPECT_GT(recording.ops.size(), 7u * 30 * 8);  // it did record
  ASSERT_EQ(plain.logits.size(), profiled.logits.size());
  for (size_t i = 0; i < plain.logits.size(); ++i) EXPECT_EQ(plain.logits[i], profiled.logits[i]) << "step " << i;
}

}  // namespace
}  // namespace lumen
