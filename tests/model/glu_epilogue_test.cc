// SwiGLU in the gate/up GEMV's launch (CudaBackendOptions::glu_epilogue, gemv_tiled.cu's
// glu_if_last) gives the logits of the same steps with the separate SwiGLU launch, bit for bit:
// a tiny synthetic model decoding one sequence with Q4_0 weights (the one-token kernels; the down
// projection reads Q8_0) and three together with Q4_1 (the kernels of several tokens; Q8_1, whose
// blocks carry a sum), replayed from CUDA graphs after the first steps. The epilogue is the SwiGLU
// launch's arithmetic; what it changes is which block computes a slice and when, so a count that
// was not reset, a block that read gate or up before the others had written them, or codes read
// from the scratch the GEMV was still reading would show as logits that differ. On the simulated
// device (sim_step_graphs_tests) blocks run one after another; on a GPU (cuda_engine_tests,
// scripts/gpu_check.sh) they run at once, which is the check of the fences.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_decode_prerequisites.h"
#include "decode_together.h"
#include "engine/loaded_model.h"
#include "synth_model_file.h"
#include "tiny_decode_sequence.h"

namespace lumen {
namespace {

using Case = std::tuple<tensor::DType, size_t>;  // the weights' type, sequences decoding together

class GluEpilogue : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (const auto missing = testing::missing_cuda_decode_prerequisite()) GTEST_SKIP() << *missing;
  }

  // The defaults' decode path (grouped tiled GEMVs, fused input quantization, graphs), set after
  // the constructor has applied any LUMEN_CUDA_* variables, so the two backends differ in the
  // epilogue alone.
  static void pin(backend::CudaBackend& backend, bool epilogue) {
    backend::CudaBackendOptions options = backend.options();
    options.glu_epilogue = epilogue;
    options.grouped_gemv = true;
    options.fused_input_quantization = true;
    options.gemv = backend::GemvKernels::ByMeasurement;
    options.step_graphs = true;
    backend.set_options(options);
  }
};

TEST_P(GluEpilogue, DecodesAsTheSeparateSwiGlu) {
  const auto [type, n_seqs] = GetParam();
  model::SynthOptions shape = testing::tiny_llama(23);
  shape.type = type;
  const testing::SynthModelFile file(shape);
  backend::CudaBackend separate(0);
  backend::CudaBackend fused(0);
  pin(separate, false);
  pin(fused, true);
  engine::LoadedModel separate_model = engine::LoadedModel::load(file.path(), separate);
  engine::LoadedModel fused_model = engine::LoadedModel::load(file.path(), fused);
  constexpr int kSteps = 8;
  const auto want = testing::decode_together(separate_model, separate, n_seqs, kSteps);
  // Twice: a second run starts from the counts the first left, which must all be 0.
  for (int run = 0; run < 2; ++run) {
    const auto got = testing::decode_together(fused_model, fused, n_seqs, kSteps);
    ASSERT_EQ(got.size(), want.size());
    for (size_t step = 0; step < want.size(); ++step) {
      ASSERT_EQ(got[step], want[step]) << "run " << run << ", decode step " << step;
    }
  }
  EXPECT_GT(fused.glu_epilogue_launches(), 0u) << "no matmul_glu took the epilogue";
  EXPECT_EQ(separate.glu_epilogue_launches(), 0u);
  EXPECT_GE(fused.step_replay_stats().replayed, 1u);
}

// A model of one layer learns SwiGLU's consumer (the down projection's activation type) in a
// shape's first step, run eagerly, and the epilogue would first need its buffers in the step after,
// which is recorded: a recording cannot allocate, and a refused recording leaves the shape eager
// for good. The epilogue keeps out of a recording whose buffers it would have to grow.
TEST(GluEpilogueOneLayer, TheFirstRecordingIsNotRefused) {
  if (const auto missing = testing::missing_cuda_decode_prerequisite()) GTEST_SKIP() << *missing;
  model::SynthOptions shape = testing::tiny_llama(29);
  shape.block_count = 1;
  const testing::SynthModelFile file(shape);
  backend::CudaBackend cuda(0);
  backend::CudaBackendOptions options = cuda.options();
  options.glu_epilogue = true;
  options.step_graphs = true;
  cuda.set_options(options);
  engine::LoadedModel model = engine::LoadedModel::load(file.path(), cuda);
  testing::decode_together(model, cuda, 2, 6);
  EXPECT_EQ(cuda.step_replay_stats().refused, 0u);
  EXPECT_GE(cuda.step_replay_stats().replayed, 1u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GluEpilogue,
                         ::testing::Values(Case{tensor::DType::Q4_0, 1}, Case{tensor::DType::Q4_1, 3}),
                         [](const ::testing::TestParamInfo<Case>& case_info) {
                           return std::string(tensor::dtype_name(std::get<0>(case_info.param))) + "Seqs" +
                                  std::to_string(std::get<1>(case_info.param));
                         });

}  // namespace
}  // namespace lumen
