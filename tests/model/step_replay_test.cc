// Graph safety on the real default model, without a GPU: a decode step that the transformer
// hands to Backend::run_replayable may be replayed from a recording of an earlier step of the
// same shape (CUDA graphs), which repeats that step's launches exactly, arguments included, and
// sees only the new step's metadata arrays (they are uploaded again at the same addresses). So
// every decode step of one shape must call the same ops with the same arguments: the same
// tensors (address, type, shape), scalars and configs, and host arrays that are the step's
// metadata arrays at the same offsets. An observer on the CPU backend writes each step's ops
// down in that form, and steps of one shape must read alike.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "decode_together.h"
#include "default_model_path.h"
#include "engine/loaded_model.h"
#include "lumen_testdata.h"
#include "model/matmul_observer.h"
#include "synth_moe_model.h"

namespace lumen {
namespace {

using backend::OpCall;
using backend::OpKind;

// One line per op of each step: what a replay of the step would repeat.
class StepSignatures final : public backend::OpObserver {
 public:
  std::vector<std::vector<std::string>> steps;

  void before_op(const OpCall& call) override {
    if (call.kind == OpKind::BeginStep) {
      step_ = *call.step;  // a copy: call.step lives only as long as the call
      steps.emplace_back();
      return;
    }
    if (!step_) return;
    if (call.kind == OpKind::EndStep) {
      step_.reset();
      return;
    }
    std::ostringstream line;
    line << backend::op_name(call.kind);
    for (const backend::TensorView* t : call.in) tensor(line, t);
    for (const backend::TensorView* t : call.out) tensor(line, t);
    for (const backend::MatmulOutput& o : call.matmul_outputs) {
      tensor(line, o.w);
      tensor(line, o.y);
    }
    line << " indices " << where(call.indices) << " seqs " << seqs(call.seqs);
    if (call.cache != nullptr) line << " cache " << call.cache->k.data << ',' << call.cache->v.data;
    if (call.rope != nullptr) {
      line << " rope " << call.rope << ',' << call.rope->rope_dims << ',' << call.rope->freq_base << ','
           << call.rope->freq_factors;
    }
    if (const backend::AttentionConfig* a = call.attention) {
      line << " attention " << a->n_heads << ',' << a->n_kv_heads << ',' << a->head_dim << ',' << a->scale << ','
           << a->sliding_window << ',' << a->softcap;
    }
    line << " value " << call.value << " numbers " << call.numbers[0] << ',' << call.numbers[1] << " glu "
         << static_cast<int>(call.glu) << " host " << call.host_in << ',' << call.host_out;
    steps.back().push_back(line.str());
  }

 private:
  // A tensor by address, but the step's logits by name: they are wherever the step says (the
  // caller's array on the CPU, the backend's fixed buffer on a device).
  void tensor(std::ostringstream& line, const backend::TensorView* t) const {
    if (t == nullptr) return;
    line << " [";
    if (step_->logits != nullptr && t->data == step_->logits) {
      line << "step_logits";
    } else {
      line << t->data;
    }
    line << ' ' << tensor::dtype_name(t->type) << ' ' << t->dims[0] << 'x' << t->dims[1] << 'x' << t->dims[2] << 'x'
         << t->dims[3] << ' ' << t->row_bytes << ']';
  }

  // A host index array as the step's array it lies in and its offset there.
  std::string where(std::span<const int32_t> part) const {
    if (part.empty()) return "none";
    const std::pair<const char*, std::span<const int32_t>> arrays[] = {
        {"tokens", step_->tokens}, {"positions", step_->positions}, {"logit_rows", step_->logit_rows}};
    for (const auto& [name, whole] : arrays) {
      if (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size()) {
        return std::string(name) + '+' + std::to_string(part.data() - whole.data()) + ':' + std::to_string(part.size());
      }
    }
    return "foreign";
  }

  std::string seqs(std::span<const backend::SequenceSlice> part) const {
    if (part.empty()) return "none";
    const std::span<const backend::SequenceSlice> whole = step_->sequences;
    if (part.data() < whole.data() || part.data() + part.size() > whole.data() + whole.size()) return "foreign";
    return std::to_string(part.data() - whole.data()) + ':' + std::to_string(part.size());
  }

  std::optional<backend::StepMetadata> step_;
};

// min_ops: fewer ops a decode step than the model surely runs (its layers times a few).
void expect_decode_steps_alike(size_t n_seqs, const std::string& path = testing::default_model_path(),
                               size_t min_ops = 30 * 8 /* SmolLM2: 30 layers of 8+ ops each */) {
  backend::CpuBackend cpu(2);
  engine::LoadedModel model = engine::LoadedModel::load(path, cpu);
  StepSignatures signatures;
  cpu.add_observer(&signatures);
  constexpr int kDecodeSteps = 5;
  testing::decode_together(model, cpu, n_seqs, kDecodeSteps);
  cpu.remove_observer(&signatures);
  ASSERT_EQ(signatures.steps.size(), n_seqs + kDecodeSteps);
  const std::vector<std::string>& first = signatures.steps[n_seqs];
  EXPECT_GT(first.size(), min_ops);
  for (const std::string& line : first) EXPECT_EQ(line.find("foreign"), std::string::npos) << line;
  for (size_t step = n_seqs + 1; step < signatures.steps.size(); ++step) {
    const std::vector<std::string>& ops = signatures.steps[step];
    ASSERT_EQ(ops.size(), first.size()) << "decode step " << step - n_seqs;
    for (size_t i = 0; i < ops.size(); ++i) {
      ASSERT_EQ(ops[i], first[i]) << "decode step " << step - n_seqs << ", op " << i;
    }
  }
  // The signature does see what differs between shapes: a prefill is not a decode step.
  EXPECT_NE(signatures.steps[0], first);
}

TEST(StepReplay, DecodeStepsOfOneSequenceCallTheSameOpsOnTheSameMemory) { expect_decode_steps_alike(1); }

TEST(StepReplay, DecodeStepsOfThreeSequencesCallTheSameOpsOnTheSameMemory) { expect_decode_steps_alike(3); }

// A mixture-of-experts model routed on the backend: its router's choice stays in the backend's
// buffers, so its decode steps read alike too (2 layers of 10+ ops).
TEST(StepReplay, DecodeStepsOfAMoeModelCallTheSameOpsOnTheSameMemory) {
  LUMEN_REQUIRE_TESTDATA();
  const testing::SynthMoeModel file;
  expect_decode_steps_alike(3, file.path(), 2 * 10);
}

// Its decode steps go to run_replayable (CUDA graphs) while it routes on the backend; with a
// matmul observer (imatrix), which needs the routing on the host, they do not.
TEST(StepReplay, AMoeModelRoutedOnTheBackendIsReplayableUnlessObserved) {
  LUMEN_REQUIRE_TESTDATA();
  const testing::SynthMoeModel file;
  backend::CpuBackend cpu(2);
  engine::LoadedModel model = engine::LoadedModel::load(file.path(), cpu);
  const int32_t token = 5, position = 3, row = 0;
  const std::vector<int32_t> table = {0};
  const backend::SequenceSlice slice{0, 1, position, table};
  const model::ForwardBatch batch{std::span(&token, 1), std::span(&position, 1), std::span(&slice, 1),
                                  std::span(&row, 1)};
  EXPECT_TRUE(model.transformer->replayable(batch));
  struct NoOpObserver final : model::MatmulObserver {
    void on_matmul(const backend::TensorView&, const backend::TensorView&) override {}
  } observer;
  model.transformer->set_matmul_observer(&observer);
  EXPECT_FALSE(model.transformer->replayable(batch));
  model.transformer->set_matmul_observer(nullptr);
  EXPECT_TRUE(model.transformer->replayable(batch));
}

TEST(StepReplay, TheCpuRunsTheOpsOfAReplayableStep) {
  backend::CpuBackend cpu(1);
  int runs = 0;
  EXPECT_THROW(cpu.run_replayable([&] { ++runs; }), Error);  // no step is open
  backend::StepMetadata step;
  cpu.begin_step(step);
  cpu.run_replayable([&] { ++runs; });
  cpu.run_replayable([&] { ++runs; });
  cpu.end_step();
  EXPECT_EQ(runs, 2);
  const backend::StepReplayStats stats = cpu.step_replay_stats();
  EXPECT_EQ(stats.replayed + stats.recorded + stats.refused, 0u);
}

}  // namespace
}  // namespace lumen
