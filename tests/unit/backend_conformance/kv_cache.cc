#include "kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::conformance {

BackendCache make_cache(Backend& backend, tensor::DType type, int64_t kv_dim, int64_t block_size, int64_t n_blocks) {
  BackendCache c;
  c.k = allocate(backend, type, {kv_dim, block_size, n_blocks, 1});
  c.v = allocate(backend, type, {kv_dim, block_size, n_blocks, 1});
  c.layer = KvLayer{c.k.view, c.v.view, block_size};
  return c;
}

namespace {

// ggml's quantize_row_q8_0_ref: d = amax / 127, codes roundf(x / d) (ties away from zero).
void encode_q8_0(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t half = tensor::float_to_fp16(d);
    std::memcpy(dst, &half, 2);
    for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
}

// ggml's quantize_row_q4_0_ref: the signed value of largest magnitude (the first one) is -8 d,
// codes min(15, (int8_t)(x / d + 8.5)), value j in the low nibble of byte j, value j + 16 high.
void encode_q4_0(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += 18) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t half = tensor::float_to_fp16(d);
    std::memcpy(dst, &half, 2);
    for (int j = 0; j < 16; ++j) {
      const auto lo = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
      const auto hi = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[j + 16] * id + 8.5f)));
      dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// E4M3's value of a code, from the definition: bias 7, 3 mantissa bits, subnormals below 2^-6,
// S.1111.111 the NaN.
double fp8_value(int code) {
  const int sign = code & 0x80 ? -1 : 1, exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::nan("");
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);
  return sign * std::ldexp(8 + mantissa, exponent - 10);
}

uint8_t encode_fp8(float v) {
  // The format is symmetric: the nearest magnitude code to |v| (the sign kept, as -0 keeps it).
  const double x = std::min<double>(std::fabs(v), 448.0);  // saturating
  int best = 0;
  for (int code = 1; code < 127; ++code) {
    const double err = std::abs(fp8_value(code) - x), best_err = std::abs(fp8_value(best) - x);
    if (err < best_err || (err == best_err && (code & 1) == 0 && (best & 1) != 0)) best = code;  // ties: even code
  }
  return static_cast<uint8_t>(best | (std::signbit(v) ? 0x80 : 0));
}

}  // namespace

void encode_row(tensor::DType type, const float* src, int64_t n, uint8_t* dst) {
  using tensor::DType;
  switch (type) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::Q8_0: encode_q8_0(src, n, dst); return;
    case DType::Q4_0: encode_q4_0(src, n, dst); return;
    case DType::FP8_E4M3:
      for (int64_t j = 0; j < n; ++j) dst[j] = encode_fp8(src[j]);
      return;
    default:
      for (int64_t j = 0; j < n; ++j) {
        const uint16_t h = type == DType::F16 ? tensor::float_to_fp16(src[j]) : tensor::float_to_bf16(src[j]);
        std::memcpy(dst + 2 * j, &h, 2);
      }
  }
}

std::vector<float> stored_rows(tensor::DType type, const std::vector<float>& values, int64_t row) {
  std::vector<float> out(values.size());
  std::vector<uint8_t> bytes(kv_slice_bytes(type, row));
  for (size_t first = 0; first < values.size(); first += static_cast<size_t>(row)) {
    encode_row(type, values.data() + first, row, bytes.data());
    tensor::dequantize_row(type, bytes.data(), out.data() + first, row);
  }
  return out;
}

std::vector<uint8_t> read_cache(Backend& backend, const BackendCache& cache) {
  const size_t block_bytes = kv_block_bytes(cache.layer);
  const auto n_blocks = static_cast<size_t>(cache.layer.k.dims[2]);
  std::vector<uint8_t> bytes(2 * n_blocks * block_bytes);
  for (size_t b = 0; b < n_blocks; ++b) {
    backend.read_kv_block(cache.layer, static_cast<int64_t>(b), bytes.data() + b * block_bytes,
                          bytes.data() + (n_blocks + b) * block_bytes);
  }
  return bytes;
}

}  // namespace lumen::backend::conformance
