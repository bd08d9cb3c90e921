// Batch-1 GEMV throughput per weight type and shape on the CUDA backend, against the device's
// own copy bandwidth measured in the same run: the numbers a GEMV change is judged by
// (scripts/gpu_check.sh gemv). One JSON object per line on stdout.
//
//   lumen_cuda_gemv_bench [types=Q4_0,Q4_K,Q6_K,Q8_0,BF16] [tokens=1]
//   lumen_cuda_gemv_bench gemm ...   (matmuls of many tokens: cuda_gemm_bench.cc)
//
// Every row of a matrix is the same quantized random row (quantizing a 128256 x 2048 matrix
// row by row with the reference quantizers takes minutes; the kernels' speed does not depend on
// the values). Each kernel variant (the one-warp, streaming, tiled and pipelined GEMV) runs the matrix enough
// times to cover about 200 ms; the time per call is the wall time of those calls over their
// count, the host enqueueing while the device runs, so small matrices measure launch overhead as
// much as the kernel (they are reported all the same: a decode step is made of them).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_bench_util.h"
#include "cuda_gemm_bench.h"
#include "tensor/quantize.h"

namespace {

using lumen::backend::CudaBackend;
using lumen::backend::CudaBackendOptions;
using lumen::backend::GemvKernels;
using lumen::backend::TensorView;
using lumen::tensor::DType;
using Clock = std::chrono::steady_clock;

// The shapes of a Llama-3 8B and 1B decode step (cols = input width, rows = outputs).
struct Shape {
  const char* what;
  int64_t cols, rows;
};
constexpr Shape kShapes[] = {
    {"1b attn_k/v", 2048, 512},  {"1b attn_q/o", 2048, 2048}, {"1b ffn_gate/up", 2048, 8192},
    {"1b ffn_down", 8192, 2048}, {"8b attn_q/o", 4096, 4096}, {"8b ffn_gate/up", 4096, 14336},
    {"8b ffn_down", 14336, 4096}, {"output 128k vocab", 2048, 128256},
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Device-to-device copy of 1 GiB, timed by events: bytes read + written per second.
double copy_gb_per_s() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0.0;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);  // warm-up
  cudaEventRecord(start);
  constexpr int kCopies = 10;
  for (int i = 0; i < kCopies; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * static_cast<double>(bytes) * kCopies / (ms * 1e-3) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "gemm") return gemm_bench_main(argc - 1, argv + 1);
  try {
    const std::vector<std::string> type_names =
        lumen::bench::split_commas(argc > 1 ? argv[1] : "Q4_0,Q4_K,Q6_K,Q8_0,BF16");
    const int64_t tokens = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
    if (lumen::backend::cuda_device_count() == 0) {
      fmt::print(stderr, "no CUDA device\n");
      return 1;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    fmt::print("{{\"device\": \"{}\", \"copy_gb_per_s\": {:.1f}}}\n", prop.name, copy_gb_per_s());

    CudaBackend backend(0);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (const std::string& name : type_names) {
      const auto type = lumen::tensor::dtype_from_name(name);
      if (!type) throw std::runtime_error("unknown type " + name);
      for (const Shape& shape : kShapes) {
        const std::optional<TensorView> uploaded =
            lumen::bench::upload_repeated_row(backend, *type, shape.cols, shape.rows, rng);
        if (!uploaded) continue;  // cols not whole blocks of this type
        const TensorView& w = *uploaded;

        std::vector<float> x(static_cast<size_t>(shape.cols * tokens));
        for (float& v : x) v = uniform(rng);
        auto x_buffer = backend.allocate(x.size() * sizeof(float));
        backend.upload(x_buffer->data(), x.data(), x.size() * sizeof(float));
        auto y_buffer = backend.allocate(static_cast<size_t>(shape.rows * tokens) * sizeof(float));
        const TensorView xv{DType::F32, {shape.cols, tokens, 1, 1}, static_cast<size_t>(shape.cols) * 4,
                            x_buffer->data()};
        TensorView yv{DType::F32, {shape.rows, tokens, 1, 1}, static_cast<size_t>(shape.rows) * 4, y_buffer->data()};

        for (const GemvKernels kernels :
             {GemvKernels::Warp, GemvKernels::Stream, GemvKernels::Tiled, GemvKernels::Pipelined}) {
          CudaBackendOptions options = backend.options();
          options.gemv = kernels;
          options.max_gemv_tokens = std::max<int64_t>(options.max_gemv_tokens, tokens);
          backend.set_options(options);
          for (int i = 0; i < 3; ++i) backend.matmul(w, xv, yv);  // warm-up
          backend.synchronize();
          // About 200 ms of calls, from one timed call's estimate.
          auto start = Clock::now();
          backend.matmul(w, xv, yv);
          backend.synchronize();
          const double one = std::max(seconds_since(start), 1e-6);
          const int calls = static_cast<int>(std::clamp(0.2 / one, 10.0, 20000.0));
          start = Clock::now();
          for (int i = 0; i < calls; ++i) backend.matmul(w, xv, yv);
          backend.synchronize();
          const double per_call = seconds_since(start) / calls;
          const double bytes = static_cast<double>(w.row_bytes) * static_cast<double>(shape.rows);
          fmt::print(
              "{{\"type\": \"{}\", \"shape\": \"{}\", \"cols\": {}, \"rows\": {}, \"tokens\": {}, \"gemv\": \"{}\", "
              "\"weight_mb\": {:.2f}, \"us_per_call\": {:.2f}, \"gb_per_s\": {:.1f}}}\n",
              name, shape.what, shape.cols, shape.rows, tokens,
              kernels == GemvKernels::Warp     ? "warp"
              : kernels == GemvKernels::Stream ? "stream"
              : kernels == GemvKernels::Tiled  ? "tiled"
                                               : "pipelined",
              bytes / 1e6, per_call * 1e6, bytes / per_call / 1e9);
        }
      }
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
