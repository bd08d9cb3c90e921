#pragma once
// Shared by the CUDA backend tests: one CPU and one CUDA backend for the whole test binary,
// the "no CUDA device" skip, and device copies of host tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "tensor/quantize.h"

namespace lumen::tensor {
// Test names and failure messages show "Q4_K", not the enum's bytes.
inline void PrintTo(DType type, std::ostream* os) { *os << dtype_name(type); }
}  // namespace lumen::tensor

namespace lumen::backend::testing {

// The CUDA backend on device 0, or null when this machine has no CUDA device.
inline CudaBackend* gpu() {
  static const std::unique_ptr<CudaBackend> backend =
      cuda_device_count() > 0 ? std::make_unique<CudaBackend>(0) : nullptr;
  return backend.get();
}

inline CpuBackend& cpu() {
  static CpuBackend backend(2);
  return backend;
}

// Every CUDA test starts with this: without a device it is skipped, visibly.
#define LUMEN_REQUIRE_CUDA()                           \
  do {                                                 \
    if (::lumen::backend::testing::gpu() == nullptr) { \
      GTEST_SKIP() << "no CUDA device";                \
    }                                                  \
  } while (0)

// The shared backend's options changed by `change` for the object's scope, then restored.
class ScopedCudaOptions {
 public:
  template <typename Change>
  explicit ScopedCudaOptions(Change&& change) : saved_(gpu()->options()) {
    CudaBackendOptions options = saved_;
    change(options);
    gpu()->set_options(options);
  }
  ~ScopedCudaOptions() { gpu()->set_options(saved_); }
  ScopedCudaOptions(const ScopedCudaOptions&) = delete;
  ScopedCudaOptions& operator=(const ScopedCudaOptions&) = delete;

 private:
  CudaBackendOptions saved_;
};

// A tensor in device memory with its view (row_bytes as given, which may exceed the data).
struct DeviceTensor {
  std::unique_ptr<Buffer> buffer;
  TensorView view;
};

// Copies a host tensor (view over host memory) into a new device buffer with the same layout.
inline DeviceTensor to_device(const TensorView& host) {
  DeviceTensor t;
  const size_t bytes = host.row_bytes * static_cast<size_t>(host.rows());
  t.buffer = gpu()->allocate(bytes);
  gpu()->upload(t.buffer->data(), host.data, bytes);
  t.view = host;
  t.view.data = t.buffer->data();
  return t;
}

// A device f32 matrix of `rows` rows of `cols` values, `stride` floats apart, zero-filled.
inline DeviceTensor device_matrix(int64_t cols, int64_t rows, int64_t stride) {
  DeviceTensor t;
  t.buffer = gpu()->allocate(static_cast<size_t>(stride * rows) * sizeof(float));
  t.view = TensorView{tensor::DType::F32,
                      {cols, rows, 1, 1},
                      static_cast<size_t>(stride) * sizeof(float),
                      t.buffer->data()};
  return t;
}

// The raw bytes of a device tensor (rows x row_bytes).
inline std::vector<uint8_t> download_bytes(const TensorView& device) {
  std::vector<uint8_t> bytes(device.row_bytes * static_cast<size_t>(device.rows()));
  gpu()->download(bytes.data(), device.data, bytes.size());
  return bytes;
}

// Row r, column c of an f32 tensor in host memory.
inline float at(const TensorView& host, int64_t r, int64_t c) {
  return host.row<const float>(r)[c];
}

// The f32 values of a device tensor, as a host matrix of rows x cols (its stride dropped).
inline std::vector<float> download_f32(const TensorView& device) {
  std::vector<float> out(static_cast<size_t>(device.elements()));
  gpu()->copy_to_host(device, out.data());
  return out;
}

// Largest |a[i] - b[i]| relative to the largest |a[i]| (a the reference).
inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// Expects every element within rel * |a[i]| + abs of its reference, naming the first that is not.
inline void expect_elementwise_close(const std::vector<float>& a, const std::vector<float>& b,
                                     double rel, double abs, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    const double bound = rel * std::fabs(static_cast<double>(a[i])) + abs;
    if (!(std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])) <= bound)) {
      ADD_FAILURE() << what << ": element " << i << " is " << b[i] << ", the CPU gives " << a[i];
      return;
    }
  }
}

// A device f32 matrix of uniform values in [-magnitude, magnitude], every 97th value 9 times
// larger (so blocks' scales differ and Q8_K's leading element is not the first).
inline DeviceTensor random_device_matrix(int64_t cols, int64_t rows, int64_t stride, uint32_t seed,
                                         float magnitude = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-magnitude, magnitude);
  std::vector<float> values(static_cast<size_t>(stride * rows));
  for (float& v : values) v = uniform(rng);
  for (size_t i = 7; i < values.size(); i += 97) values[i] *= 9.0f;
  const TensorView host{
      tensor::DType::F32, {cols, rows, 1, 1}, static_cast<size_t>(stride) * sizeof(float), values.data()};
  return to_device(host);
}

// rows x cols weights of `type` (values uniform in [-0.05, 0.05], quantized), on the device.
inline TensorView upload_random_weights(tensor::DType type, int64_t cols, int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.05f, 0.05f);
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = uniform(rng);
    tensor::quantize_row(type, row.data(), bytes.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  return gpu()->upload_weights(type, {cols, rows, 1, 1}, bytes.data());
}

}  // namespace lumen::backend::testing
