#include "tensor_io.h"

#include <cstring>
#include <random>

#include "tensor/quantize.h"

namespace lumen::backend::conformance {

std::vector<float> random_values(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

namespace {

size_t row_bytes_of(tensor::DType type, int64_t n) { return static_cast<size_t>(*tensor::row_bytes(type, n)); }

HostTensor empty_host(tensor::DType type, std::array<int64_t, 4> dims) {
  HostTensor t;
  t.type = type;
  t.dims = dims;
  t.row_bytes = row_bytes_of(type, dims[0]);
  const size_t bytes = t.row_bytes * static_cast<size_t>(t.rows());
  t.storage.resize(bytes / 64 + 1);
  return t;
}

}  // namespace

HostTensor encode(tensor::DType type, std::array<int64_t, 4> dims, const std::vector<float>& values) {
  HostTensor t = empty_host(type, dims);
  auto* bytes = static_cast<uint8_t*>(t.data());
  for (int64_t r = 0; r < t.rows(); ++r) {
    const float* src = values.data() + r * dims[0];
    uint8_t* dst = bytes + static_cast<size_t>(r) * t.row_bytes;
    if (type == tensor::DType::F32) {
      std::memcpy(dst, src, static_cast<size_t>(dims[0]) * sizeof(float));
    } else {
      tensor::quantize_row(type, src, dst, dims[0]);
    }
  }
  return t;
}

std::vector<float> decode(const HostTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.dims[0] * t.rows()));
  const auto* bytes = static_cast<const uint8_t*>(t.data());
  for (int64_t r = 0; r < t.rows(); ++r) {
    const uint8_t* src = bytes + static_cast<size_t>(r) * t.row_bytes;
    float* dst = out.data() + r * t.dims[0];
    if (t.type == tensor::DType::F32) {
      std::memcpy(dst, src, static_cast<size_t>(t.dims[0]) * sizeof(float));
    } else {
      tensor::dequantize_row(t.type, src, dst, t.dims[0]);
    }
  }
  return out;
}

BackendTensor upload(Backend& backend, const HostTensor& t) {
  BackendTensor out;
  out.host = std::make_shared<HostTensor>(t);
  out.view = backend.upload_weights(t.type, t.dims, out.host->data());
  return out;
}

BackendTensor upload_f32(Backend& backend, std::array<int64_t, 4> dims, const std::vector<float>& values) {
  return upload(backend, encode(tensor::DType::F32, dims, values));
}

BackendTensor allocate(Backend& backend, tensor::DType type, std::array<int64_t, 4> dims) {
  BackendTensor out;
  const size_t row_bytes = row_bytes_of(type, dims[0]);
  out.buffer = backend.allocate(row_bytes * static_cast<size_t>(dims[1] * dims[2] * dims[3]));
  out.view = TensorView{type, dims, row_bytes, out.buffer->data()};
  return out;
}

std::vector<float> download(Backend& backend, const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.elements()));
  backend.copy_to_host(t, out.data());
  return out;
}

}  // namespace lumen::backend::conformance
