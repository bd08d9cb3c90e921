// Where the time of a matmul of many tokens goes on the CUDA backend (a prompt's, or a decode step
// of more than max_gemv_tokens sequences): each way the backend can run it, and the f16 way's
// parts alone, one JSON object per line on stdout (scripts/gpu_check.sh gemm).
//
//   lumen_cuda_gemv_bench gemm [types=Q4_0,Q4_K,BF16] [tokens=64,512] [small=0]
//
// (A mode of the GEMV bench's binary, not one of its own: the GPU check's bundle has a size limit,
// and each binary linking the backend's kernels adds megabytes to it.)
//
// Why: on an H200 a 512-token prompt of a 1B model took ~34 ms outside its attention, and a decode
// step of 64 sequences ~31 ms, where reading the weights takes well under 1 ms and the f16 tensor
// cores do the arithmetic in ~3 ms. The f16 way converts the activations to f16 (a max, then a
// conversion), dequantizes each weight matrix to f16 and calls cuBLAS; which of these takes the
// time decides what to change. Per type, shape and token count:
//   - "path": the backend's own matmul on each of its ways: "f16" (dequantize + cuBLAS, the
//     default past max_gemv_tokens), "int8" (CudaBackendOptions::int8_gemm, where it takes the
//     type) and "gemv" (the tiled GEMV for up to 64 tokens);
//   - "part": the f16 way's launches alone: "dequantize" (the whole matrix to f16), "convert" (the
//     activations), "cublas" (cublasGemmEx as the backend calls it: f16 operands, f32 output and
//     accumulation, alpha and beta read from device memory) and "cublas_host_scalars" (the same
//     with alpha and beta from host memory).
// Each is timed over enough calls to cover about 50 ms: the paths on the wall (calls queued back
// to back, then one wait), the parts by CUDA events; tflops counts 2 rows cols tokens per call. Every row of a matrix
// is the same quantized random row (the kernels' speed does not depend on the values). small=1 shrinks every shape
// 8-fold (a run on the simulated device, to check the bench itself).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_bench_util.h"
#include "backend/cuda/kernels.h"
#include "cuda_gemm_bench.h"
#include "tensor/quantize.h"

namespace {

using lumen::backend::CudaBackend;
using lumen::backend::CudaBackendOptions;
using lumen::backend::TensorView;
using lumen::tensor::DType;

// A Llama-3 1B and 8B layer's matrices and the output layer (cols = input width, rows = outputs).
struct Shape {
  const char* what;
  int64_t cols, rows;
};
constexpr Shape kShapes[] = {
    {"1b attn_q/o", 2048, 2048},     {"1b ffn_gate/up", 2048, 8192}, {"1b ffn_down", 8192, 2048},
    {"8b ffn_gate/up", 4096, 14336}, {"8b ffn_down", 14336, 4096},   {"output 128k vocab", 2048, 128256},
};

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, +status));
}

// Device seconds per call of `run` on `stream`: one untimed call, then enough calls for ~50 ms.
double seconds_per_call(cudaStream_t stream, const std::function<void()>& run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  const auto timed = [&](int calls) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < calls; ++i) run();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3 / calls;
  };
  run();
  const double one = std::max(timed(1), 1e-6);
  const double per_call = timed(static_cast<int>(std::clamp(0.05 / one, 3.0, 2000.0)));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return per_call;
}

// Device memory freed on every way out.
struct DeviceBuffer {
  void* data = nullptr;
  explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&data, std::max<size_t>(bytes, 256)), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

void print_row(const char* kind, const std::string& name, const std::string& type, const Shape& shape, int64_t tokens,
               double seconds) {
  const double flops =
      2.0 * static_cast<double>(shape.rows) * static_cast<double>(shape.cols) * static_cast<double>(tokens);
  fmt::print(
      "{{\"{}\": \"{}\", \"type\": \"{}\", \"shape\": \"{}\", \"cols\": {}, \"rows\": {}, \"tokens\": {}, "
      "\"us_per_call\": {:.2f}, \"tflops\": {:.2f}}}\n",
      kind, name, type, shape.what, shape.cols, shape.rows, tokens, seconds * 1e6, flops / seconds / 1e12);
  std::fflush(stdout);
}

}  // namespace

int gemm_bench_main(int argc, char** argv) {
  try {
    const std::vector<std::string> type_names = lumen::bench::split_commas(argc > 1 ? argv[1] : "Q4_0,Q4_K,BF16");
    std::vector<int64_t> token_counts;
    for (const std::string& t : lumen::bench::split_commas(argc > 2 ? argv[2] : "64,512"))
      token_counts.push_back(std::stoll(t));
    const int64_t shrink = argc > 3 && std::string(argv[3]) == "1" ? 8 : 1;
    if (lumen::backend::cuda_device_count() == 0) {
      fmt::print(stderr, "no CUDA device\n");
      return 1;
    }
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    fmt::print("{{\"device\": \"{}\"}}\n", prop.name);

    CudaBackend backend(0);
    const CudaBackendOptions defaults = backend.options();
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cublasHandle_t cublas = nullptr;
    check(cublasCreate(&cublas), "cublasCreate");
    check(cublasSetStream(cublas, stream), "cublasSetStream");
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

    for (const std::string& name : type_names) {
      const auto type = lumen::tensor::dtype_from_name(name);
      if (!type) throw std::runtime_error("unknown type " + name);
      for (Shape shape : kShapes) {
        shape.cols /= shrink;
        shape.rows /= shrink;
        const std::optional<TensorView> uploaded =
            lumen::bench::upload_repeated_row(backend, *type, shape.cols, shape.rows, rng);
        if (!uploaded) continue;  // cols not whole blocks of this type
        const TensorView& w = *uploaded;
        const size_t values = static_cast<size_t>(shape.rows * shape.cols);
        DeviceBuffer w16(values * 2);

        for (const int64_t tokens : token_counts) {
          std::vector<float> x(static_cast<size_t>(shape.cols * tokens));
          for (float& v : x) v = uniform(rng);
          auto x_buffer = backend.allocate(x.size() * sizeof(float));
          backend.upload(x_buffer->data(), x.data(), x.size() * sizeof(float));
          auto y_buffer = backend.allocate(static_cast<size_t>(shape.rows * tokens) * sizeof(float));
          const TensorView xv{
              DType::F32, {shape.cols, tokens, 1, 1}, static_cast<size_t>(shape.cols) * 4, x_buffer->data()};
          TensorView yv{DType::F32, {shape.rows, tokens, 1, 1}, static_cast<size_t>(shape.rows) * 4, y_buffer->data()};

          // The backend's ways, timed on the wall over calls queued back to back (the host's
          // enqueueing overlaps the device's work, as in a step), about 50 ms of them.
          const auto path = [&](const char* way, const std::function<void(CudaBackendOptions&)>& set) {
            CudaBackendOptions options = defaults;
            set(options);
            backend.set_options(options);
            const auto timed = [&](int calls) {
              const auto start = std::chrono::steady_clock::now();
              for (int i = 0; i < calls; ++i) backend.matmul(w, xv, yv);
              backend.synchronize();
              return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
            };
            timed(1);  // warm-up: scratch, cuBLAS's plans
            const double one = std::max(timed(1), 1e-6);
            print_row("path", way, name, shape, tokens, timed(static_cast<int>(std::clamp(0.05 / one, 3.0, 2000.0))));
          };
          path("f16", [](CudaBackendOptions& o) {
            o.int8_gemm = false;
            o.max_gemv_tokens = 8;
          });
          if (lumen::backend::cuda::int8_gemm_takes(*type)) {
            path("int8", [](CudaBackendOptions& o) {
              o.int8_gemm = true;
              o.max_gemv_tokens = 8;
            });
          }
          if (tokens <= 64) path("gemv", [tokens](CudaBackendOptions& o) { o.max_gemv_tokens = tokens; });
          backend.set_options(defaults);

          // The f16 way's parts, on this bench's own stream and handle.
          DeviceBuffer x16(static_cast<size_t>(shape.cols * tokens) * 2), scale(4 * sizeof(float));
          const auto* xd = static_cast<const float*>(x_buffer->data());
          auto* xh = static_cast<uint16_t*>(x16.data);
          auto* sd = static_cast<float*>(scale.data);
          auto* wh = static_cast<uint16_t*>(w16.data);
          auto* yd = static_cast<float*>(y_buffer->data());
          print_row("part", "dequantize", name, shape, tokens, seconds_per_call(stream, [&] {
                      lumen::backend::cuda::launch_dequantize_to_f16(*type, w.data, w.row_bytes, shape.rows, shape.cols,
                                                                     wh, stream);
                    }));
          print_row("part", "convert", name, shape, tokens, seconds_per_call(stream, [&] {
                      lumen::backend::cuda::launch_convert_activations_f16(xd, shape.cols, tokens, shape.cols, sd, xh,
                                                                           stream);
                    }));
          const auto gemm = [&](const float* alpha, const float* beta) {
            check(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(shape.rows), static_cast<int>(tokens),
                               static_cast<int>(shape.cols), alpha, wh, CUDA_R_16F, static_cast<int>(shape.cols), xh,
                               CUDA_R_16F, static_cast<int>(shape.cols), beta, yd, CUDA_R_32F,
                               static_cast<int>(shape.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx");
          };
          check(cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_DEVICE), "cublasSetPointerMode");
          print_row("part", "cublas", name, shape, tokens, seconds_per_call(stream, [&] { gemm(sd + 2, sd + 3); }));
          check(cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
          const float one = 1.0f, zero = 0.0f;
          print_row("part", "cublas_host_scalars", name, shape, tokens,
                    seconds_per_call(stream, [&] { gemm(&one, &zero); }));
          check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }
      }
    }
    cublasDestroy(cublas);
    cudaStreamDestroy(stream);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
