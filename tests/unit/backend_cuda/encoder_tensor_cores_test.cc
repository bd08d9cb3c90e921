// An encoder's attention on the tensor cores (CudaBackendOptions::encoder_tensor_cores: the
// tensor-core prefill kernel with every row seeing its whole sequence, heads padded to a tile)
// against the CPU backend's bidirectional_attention, in double: within 2e-3 of the largest output
// (the CPU's emulation of the kernel's steps, tests/unit/cuda_host, is held to 1e-3), different
// from the encoder kernel's result (the option took the call), and rows no sequence owns left as
// they were. Queries, keys and values sit in wider rows, as a fused QKV projection leaves them.
// Prints both kernels' times for the shape of a Gemma 3 image (4 096 patches, 16 heads of 72).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

struct EncoderAttentionCase {
  std::string name;
  int64_t n_heads, n_kv_heads, head_dim, batch_rows;
  std::vector<std::pair<int64_t, int64_t>> seqs;  // (first row, rows)
};

void PrintTo(const EncoderAttentionCase& c, std::ostream* os) { *os << c.name; }

class CudaEncoderTensorCores : public ::testing::TestWithParam<EncoderAttentionCase> {};

// A host matrix of `rows` rows of `cols` values, 8 floats of padding after each.
TensorView padded_rows(std::vector<float>& data, int64_t cols, int64_t rows, std::mt19937& rng, float spread) {
  const int64_t stride = cols + 8;
  std::uniform_real_distribution<float> values(-spread, spread);
  data.resize(static_cast<size_t>(stride * rows));
  for (float& x : data) x = values(rng);
  return TensorView{DType::F32, {cols, rows, 1, 1}, static_cast<size_t>(stride) * sizeof(float), data.data()};
}

TEST_P(CudaEncoderTensorCores, MatchesTheCpuAndDiffersFromTheEncoderKernel) {
  LUMEN_REQUIRE_CUDA();
  const EncoderAttentionCase& c = GetParam();
  std::mt19937 rng(5);
  const int64_t n = c.batch_rows;
  std::vector<float> qh, kh, vh, marker;
  TensorView q = padded_rows(qh, c.n_heads * c.head_dim, n, rng, 2.5f);
  TensorView k = padded_rows(kh, c.n_kv_heads * c.head_dim, n, rng, 1.0f);
  TensorView v = padded_rows(vh, c.n_kv_heads * c.head_dim, n, rng, 2.0f);
  TensorView out = padded_rows(marker, c.n_heads * c.head_dim, n, rng, 0.0f);
  for (float& x : marker) x = 42.0f;
  std::vector<SequenceSlice> seqs;
  for (const auto& [first, rows] : c.seqs) seqs.push_back({first, rows, 0, {}});
  AttentionConfig config;
  config.n_heads = c.n_heads;
  config.n_kv_heads = c.n_kv_heads;
  config.head_dim = c.head_dim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  std::vector<float> expected = marker;
  TensorView expected_view = out;
  expected_view.data = expected.data();
  cpu().bidirectional_attention(q, k, v, seqs, config, expected_view);

  const DeviceTensor dq = to_device(q), dk = to_device(k), dv = to_device(v);
  const auto run = [&](bool tensor_cores, double& ms) {
    ScopedCudaOptions options([&](CudaBackendOptions& o) {
      o.encoder = true;
      o.encoder_tensor_cores = tensor_cores;
    });
    DeviceTensor dout = to_device(out);  // the marker
    gpu()->bidirectional_attention(dq.view, dk.view, dv.view, seqs, config, dout.view);
    gpu()->synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) gpu()->bidirectional_attention(dq.view, dk.view, dv.view, seqs, config, dout.view);
    gpu()->synchronize();
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 3;
    std::vector<float> got(marker.size());
    gpu()->download(got.data(), dout.view.data, got.size() * sizeof(float));
    return got;
  };
  double encoder_ms = 0, tensor_core_ms = 0;
  const std::vector<float> encoder_kernel = run(false, encoder_ms);
  const std::vector<float> tensor_cores = run(true, tensor_core_ms);
  std::printf("%s: encoder kernel %.3f ms, tensor cores %.3f ms\n", c.name.c_str(), encoder_ms, tensor_core_ms);

  double largest = 0, worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == 42.0f) {  // a padding column or a row no sequence owns
      ASSERT_EQ(tensor_cores[i], 42.0f) << "value " << i << " changed";
      continue;
    }
    largest = std::max(largest, std::fabs(static_cast<double>(expected[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(expected[i]) - tensor_cores[i]));
  }
  EXPECT_LE(worst / largest, 2e-3) << c.name;
  EXPECT_NE(encoder_kernel, tensor_cores) << c.name << ": the tensor cores did not take the call";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaEncoderTensorCores,
    ::testing::Values(EncoderAttentionCase{"siglip_d72", 16, 16, 72, 300, {{0, 300}}},
                      EncoderAttentionCase{"gqa_d64_rows_of_none", 6, 2, 64, 50, {{3, 5}, {8, 1}, {9, 0}, {10, 40}}},
                      EncoderAttentionCase{"bert_d64_batch", 12, 12, 64, 96, {{0, 40}, {40, 56}}},
                      EncoderAttentionCase{"d100_padded_to_128", 4, 4, 100, 70, {{0, 33}, {33, 37}}},
                      EncoderAttentionCase{"gemma3_image_d72", 16, 16, 72, 4096, {{0, 4096}}}),
    [](const ::testing::TestParamInfo<EncoderAttentionCase>& case_info) { return case_info.param.name; });

}  // namespace
}  // namespace lumen::backend::testing
