// CudaBackendOptions::fused_input_quantization (norm_quantize.cu, fused_input_quantization.h):
// a norm or SwiGLU quantizes its output for the GEMV after it. Every result must be the same bits
// as with the option off, and the GEMVs must really have read the producers' quantization
// (CudaBackend::prequantized_inputs), or the equality would prove nothing.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "tensor/quantize.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

// The option on or off for the test's scope.
struct WithFusedQuantization : ScopedCudaOptions {
  explicit WithFusedQuantization(bool on)
      : ScopedCudaOptions([on](CudaBackendOptions& o) { o.fused_input_quantization = on; }) {}
};

// rms_norm, add_rms_norm and swiglu alone: the row kernel (every row it takes, and a row too
// long for it) gives the plain kernels' bits.
TEST(CudaFusedInputQuantization, NormsAndSwigluGiveThePlainKernelsBits) {
  LUMEN_REQUIRE_CUDA();
  for (const int64_t cols : {int64_t{64}, int64_t{200}, int64_t{576}, int64_t{2048}, int64_t{4096}, int64_t{5000}}) {
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{8}}) {
      const std::string what = std::to_string(rows) + " x " + std::to_string(cols);
      DeviceTensor a = random_device_matrix(cols, rows, cols + 4, 1), b = random_device_matrix(cols, rows, cols, 2);
      DeviceTensor weight = random_device_matrix(cols, 1, cols, 3);
      std::vector<float> results[2][4];
      for (const bool on : {false, true}) {
        WithFusedQuantization option(on);
        DeviceTensor normed = device_matrix(cols, rows, cols), sum = device_matrix(cols, rows, cols + 2);
        DeviceTensor added_normed = device_matrix(cols, rows, cols), glu = device_matrix(cols, rows, cols);
        gpu()->rms_norm(a.view, weight.view, 1e-5f, normed.view);
        gpu()->add_rms_norm(a.view, b.view, weight.view, 1e-6f, sum.view, added_normed.view);
        gpu()->swiglu(a.view, b.view, glu.view);
        results[on][0] = download_f32(normed.view);
        results[on][1] = download_f32(sum.view);
        results[on][2] = download_f32(added_normed.view);
        results[on][3] = download_f32(glu.view);
      }
      EXPECT_EQ(results[1][0], results[0][0]) << "rms_norm " << what;
      EXPECT_EQ(results[1][1], results[0][1]) << "add_rms_norm's sum " << what;
      EXPECT_EQ(results[1][2], results[0][2]) << "add_rms_norm " << what;
      EXPECT_EQ(results[1][3], results[0][3]) << "swiglu " << what;
    }
  }
}

// A layer's decode pattern, three steps in a row (the first teaches each producer its consumer's
// type, the next two quantize in the producer): norm -> Q/K/V, add + norm -> gate/up with SwiGLU
// -> down, for each activation type; the outputs equal the option-off run's bit for bit.
TEST(CudaFusedInputQuantization, GemvsAfterAProducerGiveTheSameBits) {
  LUMEN_REQUIRE_CUDA();
  struct Case {
    DType qkv, ffn;
    int64_t dim, ffn_dim;
  };
  const Case cases[] = {
      {DType::Q4_0, DType::Q4_0, 576, 1536},   // Q8_0 (SmolLM2's widths: no whole 256 blocks)
      {DType::Q4_1, DType::Q5_1, 512, 1024},   // Q8_1
      {DType::Q4_K, DType::Q6_K, 2048, 8192},  // Q8_K
      {DType::Q8_0, DType::Q4_K, 1024, 2816},  // Q8_0 into the attention, Q8_K into the FFN
  };
  for (const Case& c : cases) {
    const TensorView wq = upload_random_weights(c.qkv, c.dim, c.dim, 11);
    const TensorView wk = upload_random_weights(c.qkv, c.dim, c.dim / 4, 12);
    const TensorView wgate = upload_random_weights(c.ffn, c.dim, c.ffn_dim, 13);
    const TensorView wup = upload_random_weights(c.ffn, c.dim, c.ffn_dim, 14);
    const TensorView wdown = upload_random_weights(c.ffn, c.ffn_dim, c.dim, 15);
    DeviceTensor attn_norm = random_device_matrix(c.dim, 1, c.dim, 16),
                 ffn_norm = random_device_matrix(c.dim, 1, c.dim, 17);
    for (const int64_t tokens : {int64_t{1}, int64_t{5}}) {
      const std::string what = std::string(tensor::dtype_name(c.qkv)) + "/" + std::string(tensor::dtype_name(c.ffn)) +
                               ", " + std::to_string(tokens) + " tokens";
      std::vector<std::vector<float>> results[2];
      const uint64_t before = gpu()->prequantized_inputs();
      for (const bool on : {false, true}) {
        WithFusedQuantization option(on);
        DeviceTensor residual = random_device_matrix(c.dim, tokens, c.dim, 18);
        DeviceTensor attn_out = random_device_matrix(c.dim, tokens, c.dim, 19, 0.5f);
        DeviceTensor normed = device_matrix(c.dim, tokens, c.dim), q = device_matrix(c.dim, tokens, c.dim);
        DeviceTensor k = device_matrix(c.dim / 4, tokens, c.dim / 4), down = device_matrix(c.dim, tokens, c.dim);
        DeviceTensor gate = device_matrix(c.ffn_dim, tokens, c.ffn_dim),
                     up = device_matrix(c.ffn_dim, tokens, c.ffn_dim);
        for (int step = 0; step < 3; ++step) {
          gpu()->rms_norm(residual.view, attn_norm.view, 1e-5f, normed.view);
          const Backend::MatmulOutput qk[] = {{&wq, &q.view}, {&wk, &k.view}};
          gpu()->matmul_same_input(normed.view, qk);
          gpu()->add_rms_norm(residual.view, attn_out.view, ffn_norm.view, 1e-5f, residual.view, normed.view);
          gpu()->matmul_glu(wgate, wup, normed.view, Glu::Swiglu, gate.view, up.view);
          gpu()->matmul(wdown, gate.view, down.view);
          for (const DeviceTensor* t : {&q, &k, &gate, &down, &residual}) results[on].push_back(download_f32(t->view));
        }
      }
      ASSERT_EQ(results[0].size(), results[1].size());
      for (size_t i = 0; i < results[0].size(); ++i) {
        EXPECT_EQ(results[1][i], results[0][i]) << what << ", step " << i / 5 << ", output " << i % 5;
      }
      // Steps 2 and 3 each: Q and K from the norm, gate and up from the add + norm, down from
      // SwiGLU (step 1 too when an earlier case left the same addresses taught).
      EXPECT_GE(gpu()->prequantized_inputs() - before, 2u * 5u) << what;
    }
  }
}

// An op between the producer and the GEMV (here a scale of the norm's output) must make the
// GEMV quantize what the tensor holds now, not what the norm wrote.
TEST(CudaFusedInputQuantization, AnOpInBetweenIsSeen) {
  LUMEN_REQUIRE_CUDA();
  const int64_t dim = 1024;
  const TensorView w = upload_random_weights(DType::Q4_K, dim, 256, 21);
  DeviceTensor norm_weight = random_device_matrix(dim, 1, dim, 22);
  std::vector<float> results[2];
  for (const bool on : {false, true}) {
    WithFusedQuantization option(on);
    DeviceTensor x = random_device_matrix(dim, 2, dim, 23), normed = device_matrix(dim, 2, dim);
    DeviceTensor y = device_matrix(256, 2, 256);
    for (int step = 0; step < 2; ++step) {  // the first step teaches the norm its consumer
      gpu()->rms_norm(x.view, norm_weight.view, 1e-5f, normed.view);
      gpu()->matmul(w, normed.view, y.view);
    }
    const uint64_t before = gpu()->prequantized_inputs();
    gpu()->rms_norm(x.view, norm_weight.view, 1e-5f, normed.view);
    gpu()->scale(normed.view, 3.0f);
    gpu()->matmul(w, normed.view, y.view);
    EXPECT_EQ(gpu()->prequantized_inputs(), before);
    results[on] = download_f32(y.view);
  }
  EXPECT_EQ(results[1], results[0]);
}

}  // namespace
}  // namespace lumen::backend::testing
