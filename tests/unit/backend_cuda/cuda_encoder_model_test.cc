// An encoder (bge, nomic-bert: $LUMEN_GPU_TEST_MODEL) on the CUDA backend against the CPU: the
// final hidden state of every token of two inputs batched together. The encoder's ops are the
// CPU's arithmetic in double (layer_norm, gelu_erf, bidirectional_attention), so what is left is
// the matmuls' activation quantization: a fault in a kernel (a wrong row of a sequence, a key of
// the other input, a missing bias) moves whole rows, far past the bound. Skips without a device,
// without the model, or when the model is not an encoder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "engine/loaded_model.h"
#include "model/kv_cache.h"
#include "teacher_forced.h"

namespace lumen {
namespace {

// Every token's final hidden state (embedding_length values a row) for the inputs batched in one pass.
std::vector<float> hidden_states(engine::LoadedModel& model, backend::Backend& backend,
                                 const std::vector<std::vector<int32_t>>& inputs) {
  std::vector<int32_t> tokens, positions, rows;
  std::vector<backend::SequenceSlice> seqs;
  for (const std::vector<int32_t>& input : inputs) {
    const auto at = static_cast<int64_t>(tokens.size());
    seqs.push_back({at, static_cast<int64_t>(input.size()), 0, {}});
    for (size_t p = 0; p < input.size(); ++p) {
      tokens.push_back(input[p]);
      positions.push_back(static_cast<int32_t>(p));
      rows.push_back(static_cast<int32_t>(at + static_cast<int64_t>(p)));
    }
  }
  model::KvCache cache(backend, model.hparams, 1, 16);
  std::vector<float> hidden(rows.size() * model.hparams.embedding_length);
  model.transformer->forward_hidden({tokens, positions, seqs, rows}, cache, hidden.data());
  return hidden;
}

TEST(CudaEncoder, HiddenStatesMatchCpu) {
  if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string path = testing::gpu_test_model_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no model at " << path;
  backend::CpuBackend cpu(0);
  engine::LoadedModel cpu_model = engine::LoadedModel::load(path, cpu);
  if (!cpu_model.transformer->architecture().features.encoder) GTEST_SKIP() << path << " is not an encoder";
  backend::CudaBackendOptions options;
  options.layer_norm = true;
  options.encoder = true;
  backend::CudaBackend gpu(0, options);
  engine::LoadedModel gpu_model = engine::LoadedModel::load(path, gpu);

  const std::vector<std::vector<int32_t>> inputs = {
      cpu_model.tokenizer.encode("The quick brown fox jumps over the lazy dog, twice.", {.add_special = true}),
      cpu_model.tokenizer.encode("Embeddings on a GPU", {.add_special = true})};
  const std::vector<float> want = hidden_states(cpu_model, cpu, inputs);
  const std::vector<float> got = hidden_states(gpu_model, gpu, inputs);
  const auto width = static_cast<size_t>(cpu_model.hparams.embedding_length);
  ASSERT_EQ(got.size(), want.size());
  double worst_cosine_gap = 0.0, worst_relative = 0.0;
  for (size_t row = 0; row < want.size() / width; ++row) {
    double dot = 0.0, ww = 0.0, gg = 0.0, diff = 0.0;
    for (size_t i = row * width; i < (row + 1) * width; ++i) {
      dot += static_cast<double>(want[i]) * got[i];
      ww += static_cast<double>(want[i]) * want[i];
      gg += static_cast<double>(got[i]) * got[i];
      diff = std::max(diff, std::abs(static_cast<double>(want[i]) - got[i]));
    }
    const double cosine_gap = 1.0 - dot / std::sqrt(ww * gg);
    worst_cosine_gap = std::max(worst_cosine_gap, cosine_gap);
    worst_relative = std::max(worst_relative, diff / std::sqrt(ww / static_cast<double>(width)));
    EXPECT_LT(cosine_gap, 1e-4) << "token row " << row;
  }
  std::printf("%zu rows: 1 - cosine at most %.3g, max |diff| / rms at most %.3g\n", want.size() / width,
              worst_cosine_gap, worst_relative);
  EXPECT_LT(worst_relative, 0.05);
}

}  // namespace
}  // namespace lumen
