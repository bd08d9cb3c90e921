// CudaBackendOptions::glu_epilogue (gemv_tiled.cu's glu_if_last): SwiGLU computed and quantized in
// the gate/up GEMV's launch. The FFN's decode pattern (add + norm -> gate/up with SwiGLU -> down)
// must give the option-off run's bits, and the launches must really have taken the epilogue
// (CudaBackend::glu_epilogue_launches) where it applies and not where it does not, or the
// equality would prove nothing. tests/model/glu_epilogue_test.cc runs it through whole models.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

TEST(CudaGluEpilogue, TheFfnGivesThePlainLaunchesBits) {
  LUMEN_REQUIRE_CUDA();
  struct Case {
    DType gate_up, down;
    int64_t dim, ffn_dim;
    GemvKernels gemv;
    bool takes;  // whether the epilogue applies
  };
  const Case cases[] = {
      {DType::Q4_0, DType::Q4_0, 512, 1536, GemvKernels::ByMeasurement, true},  // Q8_0 into down
      {DType::Q5_0, DType::Q5_1, 512, 1024, GemvKernels::ByMeasurement, true},  // Q8_1
      {DType::Q4_1, DType::Q8_0, 256, 96, GemvKernels::ByMeasurement, true},    // three slices of 32
      {DType::Q5_1, DType::Q4_0, 256, 512, GemvKernels::Tiled, true},           // Q8_1 in, Q8_0 out
      {DType::Q8_0, DType::Q8_0, 256, 512, GemvKernels::Tiled, false},          // not instantiated for Q8_0
      {DType::Q4_K, DType::Q6_K, 256, 512, GemvKernels::ByMeasurement, false},  // Q8_K into down
  };
  for (const Case& c : cases) {
    const TensorView wgate = upload_random_weights(c.gate_up, c.dim, c.ffn_dim, 31);
    const TensorView wup = upload_random_weights(c.gate_up, c.dim, c.ffn_dim, 32);
    const TensorView wdown = upload_random_weights(c.down, c.ffn_dim, c.dim, 33);
    DeviceTensor ffn_norm = random_device_matrix(c.dim, 1, c.dim, 34);
    // 12 and 40: past one pass of the GEMV's 8 tokens, a prompt's or many streams' batch where
    // max_gemv_tokens is raised (the engine tests' setting).
    for (const int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{12}, int64_t{40}}) {
      const std::string what = std::string(tensor::dtype_name(c.gate_up)) + "/" +
                               std::string(tensor::dtype_name(c.down)) + " " + std::to_string(c.ffn_dim) + ", " +
                               std::to_string(tokens) + " tokens";
      std::vector<std::vector<float>> results[2];
      uint64_t launches[2] = {};
      for (const bool on : {false, true}) {
        ScopedCudaOptions options([&](CudaBackendOptions& o) {
          o.glu_epilogue = on;
          o.fused_input_quantization = true;
          o.grouped_gemv = true;
          o.gemv = c.gemv;
          o.max_gemv_tokens = 64;
        });
        const uint64_t before = gpu()->glu_epilogue_launches();
        DeviceTensor residual = random_device_matrix(c.dim, tokens, c.dim, 35);
        DeviceTensor attn_out = random_device_matrix(c.dim, tokens, c.dim, 36, 0.5f);
        DeviceTensor normed = device_matrix(c.dim, tokens, c.dim), down = device_matrix(c.dim, tokens, c.dim);
        DeviceTensor gate = device_matrix(c.ffn_dim, tokens, c.ffn_dim),
                     up = device_matrix(c.ffn_dim, tokens, c.ffn_dim);
        // The first step teaches SwiGLU's site its consumer's type; the next two may take the
        // epilogue, the second from the counts the first left.
        for (int step = 0; step < 3; ++step) {
          gpu()->add_rms_norm(residual.view, attn_out.view, ffn_norm.view, 1e-5f, residual.view, normed.view);
          gpu()->matmul_glu(wgate, wup, normed.view, Glu::Swiglu, gate.view, up.view);
          gpu()->matmul(wdown, gate.view, down.view);
          for (const DeviceTensor* t : {&gate, &up, &down}) results[on].push_back(download_f32(t->view));
        }
        launches[on] = gpu()->glu_epilogue_launches() - before;
      }
      ASSERT_EQ(results[0].size(), results[1].size());
      for (size_t i = 0; i < results[0].size(); ++i) {
        EXPECT_EQ(results[1][i], results[0][i]) << what << ", step " << i / 3 << ", output " << i % 3;
      }
      EXPECT_EQ(launches[0], 0u) << what;
      if (c.takes) {
        EXPECT_GE(launches[1], 2u) << what << ": the epilogue did not run";
      } else {
        EXPECT_EQ(launches[1], 0u) << what << ": the epilogue ran where it does not apply";
      }
    }
  }
}

// A batch past max_gemv_tokens runs the GEMM, and a GeGLU keeps its own launch: neither takes it.
TEST(CudaGluEpilogue, GemmBatchesAndGegluKeepTheirLaunches) {
  LUMEN_REQUIRE_CUDA();
  const int64_t dim = 256, ffn_dim = 512;
  const TensorView wgate = upload_random_weights(DType::Q4_0, dim, ffn_dim, 41);
  const TensorView wup = upload_random_weights(DType::Q4_0, dim, ffn_dim, 42);
  const TensorView wdown = upload_random_weights(DType::Q4_0, ffn_dim, dim, 43);
  ScopedCudaOptions options([](CudaBackendOptions& o) { o.glu_epilogue = true; });
  for (const auto& [tokens, glu] :
       {std::pair{gpu()->options().max_gemv_tokens + 1, Glu::Swiglu}, std::pair{int64_t{2}, Glu::Geglu}}) {
    DeviceTensor x = random_device_matrix(dim, tokens, dim, 44), down = device_matrix(dim, tokens, dim);
    DeviceTensor gate = device_matrix(ffn_dim, tokens, ffn_dim), up = device_matrix(ffn_dim, tokens, ffn_dim);
    const uint64_t before = gpu()->glu_epilogue_launches();
    for (int step = 0; step < 2; ++step) {
      gpu()->matmul_glu(wgate, wup, x.view, glu, gate.view, up.view);
      gpu()->matmul(wdown, gate.view, down.view);
    }
    EXPECT_EQ(gpu()->glu_epilogue_launches(), before) << tokens << " tokens";
  }
}

}  // namespace
}  // namespace lumen::backend::testing
