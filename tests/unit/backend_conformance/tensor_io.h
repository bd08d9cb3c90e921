#pragma once
// Moving test tensors in and out of a backend through the Backend interface alone, so the same
// check runs on any backend: upload_weights is the way in (the CPU keeps a view of the host
// bytes, a device backend copies them), allocate gives zero-filled outputs, copy_to_host is the
// way out. Also seeded random values and the reference encoding of f32 values into any type.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace lumen::backend::conformance {

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// One cache line of a host tensor's bytes: a vector of these is 64-byte aligned.
struct alignas(64) HostLine {
  uint8_t bytes[64];
};

// Bytes of a tensor in host memory, 64-byte aligned (as the weights in a mapped GGUF file are).
struct HostTensor {
  tensor::DType type = tensor::DType::F32;
  std::array<int64_t, 4> dims = {1, 1, 1, 1};
  size_t row_bytes = 0;
  std::vector<HostLine> storage;

  void* data() { return storage.data(); }
  const void* data() const { return storage.data(); }
  int64_t rows() const { return dims[1] * dims[2] * dims[3]; }
};

// `values` (dims[0] per row) stored as `type`: copied, rounded or quantized with the reference
// quantizer of tensor/.
HostTensor encode(tensor::DType type, std::array<int64_t, 4> dims, const std::vector<float>& values);
// The f32 values a tensor holds, through the reference dequantizer: what every backend must
// compute with.
std::vector<float> decode(const HostTensor& t);

// A tensor on a backend. The host copy stays alive with it: the CPU's view points into it.
struct BackendTensor {
  std::shared_ptr<HostTensor> host;
  std::unique_ptr<Buffer> buffer;
  TensorView view;
};

// A fresh copy of `t` on the backend (ops that write in place may write to it).
BackendTensor upload(Backend& backend, const HostTensor& t);
// An f32 tensor of `values` on the backend.
BackendTensor upload_f32(Backend& backend, std::array<int64_t, 4> dims, const std::vector<float>& values);
// A zero-filled backend buffer viewed as `type` with `dims`.
BackendTensor allocate(Backend& backend, tensor::DType type, std::array<int64_t, 4> dims);
// Every row of an f32 / f16 / quantized tensor as f32.
std::vector<float> download(Backend& backend, const TensorView& t);

}  // namespace lumen::backend::conformance
