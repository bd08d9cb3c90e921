// A prompt's routed experts on the device's tensor-core GEMM (CudaBackendOptions::moe_device_gemm,
// gemm_experts.cu), against the host way (the ids copied back, each chosen expert through
// dequantize + cuBLAS: the same f16 operands, f32 sums in another order) and the CPU backend's
// moe_ffn_routed. Tolerances per output value, in units of the largest output |value|:
//  - vs the host way: 2e-3. The f32 sums differ only in order (a few ulps), but the GLU's output
//    is rounded to f16 before down, where an ulp can move a value across a rounding boundary (an
//    f16 ulp, 2^-11, of one input).
//  - vs the CPU, whose activations are 8-bit blocks: 4e-2, as for the host way.
// Which way ran is told by CudaBackend::expert_gemm_layers, not by the outputs, which can agree
// bit for bit.
// The CPU's emulation of the kernel (tests/unit/cuda_host/expert_gemm_test.cc) is held to 1e-5 of
// the exact sum; here the GPU's own products are checked. Also prints both ways' times for the
// case's shape, and a Mixtral-sized layer's (8 experts of 4096 x 14336, 2 a token, 512 tokens).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/common/expert_router.h"
#include "cuda_test_util.h"
#include "tensor/quantize.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

struct ExpertGemmCase {
  std::string name;
  DType type;
  int64_t in, ff, experts, used, tokens;
  Glu glu;
};

void PrintTo(const ExpertGemmCase& c, std::ostream* os) { *os << c.name; }

// A host tensor of `type` with dims {cols, rows, experts}, from random values.
struct HostWeights {
  std::vector<uint8_t> bytes;
  TensorView view;
};

HostWeights random_weights(DType type, int64_t cols, int64_t rows, int64_t experts, std::mt19937& rng) {
  HostWeights w;
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  w.bytes.resize(row_bytes * static_cast<size_t>(rows * experts));
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> values(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows * experts; ++r) {
    for (float& v : values) v = normal(rng);
    tensor::quantize_row(type, values.data(), w.bytes.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  w.view = TensorView{type, {cols, rows, experts, 1}, row_bytes, w.bytes.data()};
  return w;
}

class CudaExpertGemm : public ::testing::TestWithParam<ExpertGemmCase> {};

TEST_P(CudaExpertGemm, MatchesTheHostWayAndTheCpu) {
  LUMEN_REQUIRE_CUDA();
  const ExpertGemmCase& c = GetParam();
  std::mt19937 rng(11);
  const HostWeights gate = random_weights(c.type, c.in, c.ff, c.experts, rng);
  const HostWeights up = random_weights(c.type, c.in, c.ff, c.experts, rng);
  const HostWeights down = random_weights(c.type, c.ff, c.in, c.experts, rng);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(c.in * c.tokens)), logits(static_cast<size_t>(c.experts * c.tokens));
  for (float& v : x) v = normal(rng);
  for (float& v : logits) v = normal(rng);
  common::Routing routing;
  common::route_tokens(logits, {c.experts, c.used}, routing);
  const TensorView x_view = f32_matrix(x.data(), c.in, c.tokens);
  const TensorView ids_view{
      DType::I32, {c.used, c.tokens, 1, 1}, static_cast<size_t>(c.used) * 4, routing.experts.data()};
  const TensorView weights_view = f32_matrix(routing.weights.data(), c.used, c.tokens);

  std::vector<float> expected(x.size(), 0.0f);
  TensorView expected_view = f32_matrix(expected.data(), c.in, c.tokens);
  const RoutedExperts host_experts{&gate.view, &up.view, &down.view};
  cpu().moe_ffn_routed(x_view, ids_view, weights_view, host_experts, c.glu, expected_view);

  const DeviceTensor dgate = to_device(gate.view), dup = to_device(up.view), ddown = to_device(down.view);
  const DeviceTensor dx = to_device(x_view), dids = to_device(ids_view), dweights = to_device(weights_view);
  const RoutedExperts device_experts{&dgate.view, &dup.view, &ddown.view};
  const auto run = [&](bool device_gemm, double& ms, uint64_t& gemm_layers) {
    ScopedCudaOptions options([&](CudaBackendOptions& o) {
      o.routed_moe = true;
      o.moe_gemv_macs_per_expert = 0;  // never the expert GEMV for a prompt
      o.moe_device_gemm = device_gemm;
      o.max_gemv_tokens = 1;  // the host way's matmuls on cuBLAS for any expert of 2 pairs or more
    });
    DeviceTensor out = device_matrix(c.in, c.tokens, c.in);
    const uint64_t before = gpu()->expert_gemm_layers();
    gpu()->moe_ffn_routed(dx.view, dids.view, dweights.view, device_experts, c.glu, out.view);
    gpu()->synchronize();
    gemm_layers = gpu()->expert_gemm_layers() - before;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) {
      gpu()->moe_ffn_routed(dx.view, dids.view, dweights.view, device_experts, c.glu, out.view);
    }
    gpu()->synchronize();
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 3;
    return download_f32(out.view);
  };
  double host_ms = 0, gemm_ms = 0;
  uint64_t host_way_gemm_layers = 0, gemm_layers = 0;
  const std::vector<float> host_way = run(false, host_ms, host_way_gemm_layers);
  const std::vector<float> device_gemm = run(true, gemm_ms, gemm_layers);
  std::printf("%s: host way %.3f ms, device GEMM %.3f ms\n", c.name.c_str(), host_ms, gemm_ms);

  // Which way ran: the outputs cannot tell, since the GEMM's f32 sums can run in cuBLAS's order
  // (on an H200 all seven cases came out bit for bit the host way's).
  EXPECT_EQ(host_way_gemm_layers, 0u) << c.name << ": the host way took the device GEMM";
  EXPECT_EQ(gemm_layers, 1u) << c.name << ": the device GEMM did not take the call";
  EXPECT_LE(max_relative_difference(host_way, device_gemm), 2e-3) << c.name << ": device GEMM vs host way";
  // The CPU multiplies K-quant weights by Q8_K activations, both ways here f16 ones: Q6_K with a
  // single expert a token came to 3.0e-2 both ways on an H200.
  EXPECT_LE(max_relative_difference(expected, device_gemm), 4e-2) << c.name << ": device GEMM vs CPU";
  EXPECT_LE(max_relative_difference(expected, host_way), 4e-2) << c.name << ": host way vs CPU";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaExpertGemm,
    ::testing::Values(ExpertGemmCase{"q4_0_swiglu", DType::Q4_0, 256, 512, 8, 2, 200, Glu::Swiglu},
                      ExpertGemmCase{"q4_k_qwen3_like", DType::Q4_K, 512, 256, 32, 8, 150, Glu::Swiglu},
                      ExpertGemmCase{"q8_0_geglu_ragged", DType::Q8_0, 160, 224, 6, 2, 97, Glu::Geglu},
                      ExpertGemmCase{"q6_k", DType::Q6_K, 256, 256, 4, 1, 80, Glu::Swiglu},
                      ExpertGemmCase{"q5_0", DType::Q5_0, 128, 384, 8, 2, 130, Glu::Swiglu},
                      ExpertGemmCase{"f16", DType::F16, 128, 256, 8, 2, 100, Glu::Swiglu},
                      ExpertGemmCase{"bf16", DType::BF16, 128, 256, 8, 2, 100, Glu::Swiglu}),
    [](const ::testing::TestParamInfo<ExpertGemmCase>& case_info) { return case_info.param.name; });

// A Mixtral-sized layer (Q4_0: 8 experts of 4096 x 14336, 2 a token) for a 512-token prompt, both
// ways, timed; their outputs agree as above. The weights are random blocks (random bytes, small
// finite scales), which quantize_row would take minutes to make.
TEST(CudaExpertGemmTiming, MixtralSizedLayer) {
  LUMEN_REQUIRE_CUDA();
  constexpr int64_t kIn = 4096, kFf = 14336, kExperts = 8, kUsed = 2, kTokens = 512;
  std::mt19937 rng(3);
  const auto blocks = [&](int64_t cols, int64_t rows) {
    HostWeights w;
    const size_t row_bytes = *tensor::row_bytes(DType::Q4_0, cols);
    w.bytes.resize(row_bytes * static_cast<size_t>(rows * kExperts));
    for (size_t i = 0; i + 4 <= w.bytes.size(); i += 4) {
      const auto r = static_cast<uint32_t>(rng());
      std::memcpy(&w.bytes[i], &r, 4);
    }
    const uint16_t scale = tensor::float_to_fp16(0.002f);
    for (size_t b = 0; b < w.bytes.size(); b += 18) std::memcpy(&w.bytes[b], &scale, 2);
    w.view = TensorView{DType::Q4_0, {cols, rows, kExperts, 1}, row_bytes, w.bytes.data()};
    return w;
  };
  const HostWeights gate = blocks(kIn, kFf), up = blocks(kIn, kFf), down = blocks(kFf, kIn);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kIn * kTokens)), logits(static_cast<size_t>(kExperts * kTokens));
  for (float& v : x) v = normal(rng);
  for (float& v : logits) v = normal(rng);
  common::Routing routing;
  common::route_tokens(logits, {kExperts, kUsed}, routing);
  const DeviceTensor dgate = to_device(gate.view), dup = to_device(up.view), ddown = to_device(down.view);
  const DeviceTensor dx = to_device(f32_matrix(x.data(), kIn, kTokens));
  const DeviceTensor dids =
      to_device(TensorView{DType::I32, {kUsed, kTokens, 1, 1}, kUsed * 4, routing.experts.data()});
  const DeviceTensor dweights = to_device(f32_matrix(routing.weights.data(), kUsed, kTokens));
  const RoutedExperts experts{&dgate.view, &dup.view, &ddown.view};
  std::vector<float> outputs[2];
  for (const bool device_gemm : {false, true}) {
    ScopedCudaOptions options([&](CudaBackendOptions& o) {
      o.routed_moe = true;
      o.moe_device_gemm = device_gemm;
    });
    DeviceTensor out = device_matrix(kIn, kTokens, kIn);
    const uint64_t before = gpu()->expert_gemm_layers();
    gpu()->moe_ffn_routed(dx.view, dids.view, dweights.view, experts, Glu::Swiglu, out.view);
    gpu()->synchronize();
    EXPECT_EQ(gpu()->expert_gemm_layers() - before, device_gemm ? 1u : 0u) << "the way taken";
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; ++i)
      gpu()->moe_ffn_routed(dx.view, dids.view, dweights.view, experts, Glu::Swiglu, out.view);
    gpu()->synchronize();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 5;
    // 2 x 3 x 4096 x 14336 multiply-adds a pair (gate, up, down).
    const double tflops = 2.0 * 3.0 * kIn * kFf * kTokens * kUsed / (ms * 1e-3) / 1e12;
    std::printf(
        "{\"bench\": \"moe_prompt_layer\", \"shape\": \"mixtral 8x4096x14336 top2\", \"tokens\": %lld, "
        "\"device_gemm\": %s, \"ms\": %.3f, \"tflops\": %.1f}\n",
        static_cast<long long>(kTokens), device_gemm ? "true" : "false", ms, tflops);
    outputs[device_gemm ? 1 : 0] = download_f32(out.view);
  }
  EXPECT_LE(max_relative_difference(outputs[0], outputs[1]), 2e-3) << "device GEMM vs host way";
}

}  // namespace
}  // namespace lumen::backend::testing
