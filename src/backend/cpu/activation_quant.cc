#include "backend/cpu/activation_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

// Round half to even, as the SIMD round instruction in its default mode does.
int round_even(float v) { return static_cast<int>(std::nearbyintf(v)); }

// One 32-value block scaled by 127 / amax; returns the sum of the codes.
int quantize_block_32(const float* x, float& d, int8_t* qs) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  d = amax / 127.0f;
  const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int i = 0; i < 32; ++i) {
    qs[i] = static_cast<int8_t>(round_even(x[i] * inverse));
    sum += qs[i];
  }
  return sum;
}

void quantize_q8_0(const float* x, uint8_t* out, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, out += sizeof(tensor::BlockQ8_0)) {
    tensor::BlockQ8_0 block;
    float d = 0.0f;
    quantize_block_32(x, d, block.qs);
    block.d = tensor::float_to_fp16(d);
    std::memcpy(out, &block, sizeof(block));
  }
}

void quantize_q8_1(const float* x, uint8_t* out, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32, out += sizeof(tensor::BlockQ8_1)) {
    tensor::BlockQ8_1 block;
    float d = 0.0f;
    const int sum = quantize_block_32(x, d, block.qs);
    block.d = tensor::float_to_fp16(d);
    block.s = tensor::float_to_fp16(d * static_cast<float>(sum));
    std::memcpy(out, &block, sizeof(block));
  }
}

// The scale is -127 / (the element of largest magnitude, first one wins), so codes may come
// out negated with a negative d: the products are the same.
void quantize_q8_k(const float* x, uint8_t* out, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 256, out += sizeof(tensor::BlockQ8_K)) {
    tensor::BlockQ8_K block{};
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 256; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    if (amax != 0.0f) {
      const float iscale = -127.0f / max;
      for (int i = 0; i < 256; ++i) {
        block.qs[i] = static_cast<int8_t>(std::min(127, round_even(iscale * x[i])));
      }
      for (int s = 0; s < 16; ++s) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += block.qs[16 * s + i];
        block.bsums[s] = static_cast<int16_t>(sum);
      }
      block.d = 1.0f / iscale;
    }
    std::memcpy(out, &block, sizeof(block));
  }
}

}  // namespace

void quantize_activation_row(tensor::DType act, const float* x, void* dst, int64_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  switch (act) {
    case tensor::DType::Q8_0: return quantize_q8_0(x, out, n);
    case tensor::DType::Q8_1: return quantize_q8_1(x, out, n);
    case tensor::DType::Q8_K: return quantize_q8_k(x, out, n);
    default: fail("no activation quantizer for {}", tensor::dtype_name(act));
  }
}

}  // namespace lumen::backend::cpu
