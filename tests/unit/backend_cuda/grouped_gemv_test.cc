// CudaBackendOptions::grouped_gemv (gemv_groups.h, launch_gemv_quantized_tiled_group): the
// outputs of one input that share a weight type run as one tiled launch. Every output must be
// the bits of its own matmul, and the launches must really have been grouped
// (CudaBackend::grouped_gemv_launches), or the equality would prove nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

struct Layer {
  const char* what;
  std::vector<DType> types;  // one output each
  std::vector<int64_t> rows;
  int64_t cols;
  GemvKernels gemv = GemvKernels::ByMeasurement;
};

// Q/K/V of one type (K and V of a few rows: blocks of one matrix end mid-way through a block of
// four rows), a Q4_K_M layer's mix (V in Q6_K), gate/up, Q8_0 on the tiled kernels, and a
// matmul_same_input of more outputs than one launch takes.
std::vector<Layer> layers() {
  return {
      {"Q4_0 Q/K/V", {DType::Q4_0, DType::Q4_0, DType::Q4_0}, {96, 30, 30}, 512},
      {"Q4_K_M Q/K/V", {DType::Q4_K, DType::Q4_K, DType::Q6_K}, {256, 64, 64}, 1024},
      {"Q5_0 gate/up", {DType::Q5_0, DType::Q5_0}, {700, 700}, 256},
      {"Q8_0 tiled", {DType::Q8_0, DType::Q8_0, DType::Q8_0}, {64, 16, 17}, 4352, GemvKernels::Tiled},
      {"six Q4_1", std::vector<DType>(6, DType::Q4_1), {33, 1, 64, 5, 128, 9}, 8192},
  };
}

TEST(CudaGroupedGemv, EachOutputEqualsItsOwnMatmul) {
  LUMEN_REQUIRE_CUDA();
  for (const Layer& layer : layers()) {
    std::vector<TensorView> weights;
    for (size_t i = 0; i < layer.types.size(); ++i) {
      weights.push_back(
          upload_random_weights(layer.types[i], layer.cols, layer.rows[i], static_cast<uint32_t>(30 + i)));
    }
    for (const int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{8}}) {
      DeviceTensor x = random_device_matrix(layer.cols, tokens, layer.cols + 8, 40);
      for (const bool x_on_host : {false, true}) {
        std::vector<float> host_x;
        TensorView input = x.view;
        if (x_on_host) {
          host_x.resize(static_cast<size_t>((layer.cols + 8) * tokens));
          gpu()->download(host_x.data(), x.view.data, host_x.size() * sizeof(float));
          input.data = host_x.data();
        }
        const std::string what = std::string(layer.what) + ", " + std::to_string(tokens) + " tokens, x on " +
                                 (x_on_host ? "host" : "device");
        std::vector<std::vector<float>> grouped, alone;
        const uint64_t before = gpu()->grouped_gemv_launches();
        {
          ScopedCudaOptions option([&](CudaBackendOptions& o) {
            o.grouped_gemv = true;
            o.gemv = layer.gemv;
          });
          std::vector<DeviceTensor> ys;
          std::vector<Backend::MatmulOutput> outputs;
          for (size_t i = 0; i < weights.size(); ++i)
            ys.push_back(device_matrix(layer.rows[i], tokens, layer.rows[i] + 3));
          for (size_t i = 0; i < weights.size(); ++i) outputs.push_back({&weights[i], &ys[i].view});
          gpu()->matmul_same_input(input, outputs);
          for (const DeviceTensor& y : ys) grouped.push_back(download_f32(y.view));
          // The same outputs one matmul at a time (grouping applies to matmul_same_input only).
          for (size_t i = 0; i < weights.size(); ++i) {
            DeviceTensor y = device_matrix(layer.rows[i], tokens, layer.rows[i]);
            gpu()->matmul(weights[i], input, y.view);
            alone.push_back(download_f32(y.view));
          }
        }
        for (size_t i = 0; i < weights.size(); ++i) EXPECT_EQ(grouped[i], alone[i]) << what << ", output " << i;
        EXPECT_GE(gpu()->grouped_gemv_launches() - before, 1u) << what;
      }
    }
  }
}

// matmul_glu composes matmul_same_input: gate and up in one launch, then the GLU, the same bits
// as with the option off.
TEST(CudaGroupedGemv, GluGivesTheUngroupedBits) {
  LUMEN_REQUIRE_CUDA();
  const int64_t cols = 2048, rows = 2816;
  for (const DType type : {DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
    const TensorView gate_w = upload_random_weights(type, cols, rows, 51),
                     up_w = upload_random_weights(type, cols, rows, 52);
    DeviceTensor x = random_device_matrix(cols, 3, cols, 53);
    std::vector<float> results[2];
    const uint64_t before = gpu()->grouped_gemv_launches();
    for (const bool on : {false, true}) {
      ScopedCudaOptions option([on](CudaBackendOptions& o) { o.grouped_gemv = on; });
      DeviceTensor gate = device_matrix(rows, 3, rows), up = device_matrix(rows, 3, rows);
      gpu()->matmul_glu(gate_w, up_w, x.view, Backend::Glu::Swiglu, gate.view, up.view);
      results[on] = download_f32(gate.view);
    }
    EXPECT_EQ(results[1], results[0]) << tensor::dtype_name(type);
    EXPECT_EQ(gpu()->grouped_gemv_launches() - before, 1u) << tensor::dtype_name(type);
  }
}

}  // namespace
}  // namespace lumen::backend::testing
