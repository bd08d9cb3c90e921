#include "backend/cuda/device_ceilings.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/cuda/device_memory.h"

namespace lumen::backend::cuda {

namespace {

// Device memory for one measurement, freed on every way out.
struct Scratch {
  void* data = nullptr;
  explicit Scratch(size_t bytes) { check_cuda(cudaMalloc(&data, bytes), "cudaMalloc"); }
  ~Scratch() { cudaFree(data); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// Bytes of a fixed pseudo-random pattern (tensor cores on all-zero data draw less power and can
// run faster than on real data), each passed through `shape` (to keep f16 values finite).
void fill(void* device, size_t bytes, uint8_t (*shape)(size_t, uint32_t), cudaStream_t stream) {
  std::vector<uint8_t> host(bytes);
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    host[i] = shape(i, x);
  }
  check_cuda(cudaMemcpyAsync(device, host.data(), bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// The best of `reps` timed runs of `run` after one untimed, in seconds.
double best_seconds(int reps, cudaStream_t stream, const std::function<void()>& run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  run();
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    const double s = static_cast<double>(ms) * 1e-3;
    if (r == 0 || s < best) best = s;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

double copy_gbps(cudaStream_t stream) {
  constexpr size_t kBytes = size_t{256} << 20;  // far beyond any L2
  Scratch a(kBytes), b(kBytes);
  check_cuda(cudaMemsetAsync(a.data, 1, kBytes, stream), "cudaMemsetAsync");
  const double s = best_seconds(10, stream, [&] {
    check_cuda(cudaMemcpyAsync(b.data, a.data, kBytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  return 2.0 * static_cast<double>(kBytes) / s / 1e9;  // read and written
}

// n x n x n matrix products: f16 (f32 sums), or int8 (int32 sums; 0 if cuBLAS refuses it).
constexpr int kN = 8192;

double f16_tflops(cudaStream_t stream, cublasHandle_t cublas) {
  const size_t elements = static_cast<size_t>(kN) * kN;
  Scratch a(2 * elements), b(2 * elements), c(4 * elements);
  // f16 values of magnitude in [1, 1.25), random signs and low mantissa bits: high byte 0x3c or 0xbc.
  const auto half = [](size_t i, uint32_t x) {
    return static_cast<uint8_t>(i % 2 == 0 ? x & 0xff : ((x >> 8) & 0x80) | 0x3c);
  };
  fill(a.data, 2 * elements, half, stream);
  fill(b.data, 2 * elements, half, stream);
  const float one = 1.0f, zero = 0.0f;
  bool ok = true;
  const double s = best_seconds(5, stream, [&] {
    ok = ok && cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, kN, kN, kN, &one, a.data, CUDA_R_16F, kN, b.data,
                            CUDA_R_16F, kN, &zero, c.data, CUDA_R_32F, kN, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  });
  return ok ? 2.0 * kN * static_cast<double>(kN) * kN / s / 1e12 : 0.0;
}

double int8_tops(cudaStream_t stream, cublasHandle_t cublas) {
  const size_t elements = static_cast<size_t>(kN) * kN;
  Scratch a(elements), b(elements), c(4 * elements);
  const auto byte = [](size_t, uint32_t x) { return static_cast<uint8_t>(x & 0xff); };
  fill(a.data, elements, byte, stream);
  fill(b.data, elements, byte, stream);
  const int32_t one = 1, zero = 0;
  bool ok = true;
  const double s = best_seconds(5, stream, [&] {
    ok = ok &&
         cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, kN, kN, kN, &one, a.data, CUDA_R_8I, kN, b.data, CUDA_R_8I, kN,
                      &zero, c.data, CUDA_R_32I, kN, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  });
  return ok ? 2.0 * kN * static_cast<double>(kN) * kN / s / 1e12 : 0.0;
}

}  // namespace

DeviceCeilings measure_device_ceilings(int device, cudaStream_t stream, cublasHandle_t cublas) {
  DeviceCeilings out;
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  out.device = prop.name;
  out.copy_gbps = copy_gbps(stream);
  out.f16_tflops = f16_tflops(stream, cublas);
  out.int8_tops = int8_tops(stream, cublas);
  return out;
}

}  // namespace lumen::backend::cuda
