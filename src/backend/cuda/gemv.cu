// GEMV for decode and small batches: one warp per weight row, up to kGemvMaxTokens tokens per
// pass, so each weight byte is read from memory once per pass for all of them (decode is a
// stream over the weights; the activations, a few KB per token, stay in L1/L2).
//
// Quantized weights meet activations quantized the CPU's way (activation_quant.cu) and are
// multiplied with __dp4a (4 int8 products per instruction). The integer sum of each block is
// exact, and each block's float value is formed as the CPU forms it (backend/cpu/
// matmul_scalar.cc), so a row's result differs from the CPU's only in the order in which block
// values are added: lane i adds blocks i, i + 32, ... in order, then the warp adds its lanes
// in a fixed butterfly. That order does not depend on how many tokens share the pass, so a
// token's result does not depend on its batch.
//
// Legacy formats: lane = one 32-value block. K-quants: lane = one 32-value part of a 256-value
// super-block; the 8 lanes of a super-block add their integer sums by shuffles and one of them
// forms the super-block's value: d * xd * sum(scale * dot) - dmin * xd * sum(min * bsum).
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/quant_units.cuh"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kRowsPerBlock = 4;  // one warp per row
constexpr int kThreads = 32 * kRowsPerBlock;
constexpr int kQ4_0 = static_cast<int>(DType::Q4_0);
constexpr int kQ4_1 = static_cast<int>(DType::Q4_1);
constexpr int kQ8_0 = static_cast<int>(DType::Q8_0);
constexpr int kQ4_K = static_cast<int>(DType::Q4_K);
constexpr int kQ6_K = static_cast<int>(DType::Q6_K);

// The activation codes of one 32-value unit of a token: 8 words of 4 int8, in element order.
__device__ __forceinline__ void load_activation_unit(const int8_t* qs, int x[8]) {
  const int4* p = reinterpret_cast<const int4*>(qs);  // 16-byte aligned: units start at 32k
  const int4 a = p[0], b = p[1];
  x[0] = a.x;
  x[1] = a.y;
  x[2] = a.z;
  x[3] = a.w;
  x[4] = b.x;
  x[5] = b.y;
  x[6] = b.z;
  x[7] = b.w;
}

__device__ __forceinline__ int dot_words(const int* w, const int* x, int first, int count) {
  int sum = 0;
#pragma unroll
  for (int k = 0; k < count; ++k) sum = __dp4a(w[first + k], x[first + k], sum);
  return sum;
}

// Writes sum over lanes of acc[t] to y[t * ys + row] for t < nt.
__device__ __forceinline__ void store_row_results(const float* acc, int nt, float* y, int64_t ys,
                                                  int64_t row) {
#pragma unroll
  for (int t = 0; t < kGemvMaxTokens; ++t) {
    if (t < nt) {
      const float total = warp_sum(acc[t]);
      if (threadIdx.x % 32 == 0) y[t * ys + row] = total;
    }
  }
}

// The 32 codes of legacy block `blk` as signed bytes in element order, and its scale (and min).
template <int F>
__device__ __forceinline__ void load_legacy_block(const uint8_t* blk, int w[8], float& d,
                                                  float& m) {
  d = half_bits_to_float(load_u16(blk));
  m = 0.0f;
  if constexpr (F == kQ8_0) {
#pragma unroll
    for (int k = 0; k < 8; ++k) w[k] = static_cast<int>(load_u32_align2(blk + 2 + 4 * k));
  } else {
    uint32_t qs[4];
    if constexpr (F == kQ4_1) {
      m = half_bits_to_float(load_u16(blk + 2));
#pragma unroll
      for (int k = 0; k < 4; ++k) qs[k] = *reinterpret_cast<const uint32_t*>(blk + 4 + 4 * k);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) qs[k] = load_u32_align2(blk + 2 + 4 * k);
    }
    // Elements 4k .. 4k + 3 are the low nibbles of qs bytes 4k .. 4k + 3, elements 16 + 4k ..
    // their high nibbles.
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t low = qs[k] & 0x0F0F0F0Fu, high = (qs[k] >> 4) & 0x0F0F0F0Fu;
      if constexpr (F == kQ4_0) {  // q - 8, bytewise: -8 .. 7 as int8
        low = __vsub4(low, 0x08080808u);
        high = __vsub4(high, 0x08080808u);
      }
      w[k] = static_cast<int>(low);
      w[4 + k] = static_cast<int>(high);
    }
  }
}

template <int F>
__global__ void gemv_legacy_kernel(const uint8_t* weights, size_t row_bytes, int64_t rows,
                                   int64_t cols, Q8Activations x, int64_t t0, int nt, float* y,
                                   int64_t ys) {
  constexpr int kBlockBytes = F == kQ4_0 ? kQ4_0Bytes : (F == kQ4_1 ? kQ4_1Bytes : kQ8_0Bytes);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp
  const int lane = threadIdx.x % 32;
  const uint8_t* wrow = weights + row * row_bytes;
  const int64_t blocks = cols / 32;
  float acc[kGemvMaxTokens] = {};
  for (int64_t b = lane; b < blocks; b += 32) {
    int w[8];
    float wd, wm;
    load_legacy_block<F>(wrow + b * kBlockBytes, w, wd, wm);
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < nt) {
        const int64_t token = t0 + t;
        int xq[8];
        load_activation_unit(x.qs + token * cols + b * 32, xq);
        const int sumi = dot_words(w, xq, 0, 8);
        float v = __fmul_rn(static_cast<float>(sumi), __fmul_rn(wd, x.d[token * blocks + b]));
        if constexpr (F == kQ4_1) v = __fadd_rn(v, __fmul_rn(wm, x.s[token * blocks + b]));
        acc[t] = __fadd_rn(acc[t], v);
      }
    }
  }
  store_row_results(acc, nt, y, ys, row);
}

// Unit j (0..7) of a K-quant super-block, decoded for the dot product: 8 words of codes, the
// integer scales of its two 16-value halves, and the mins of those halves (the offset the
// value subtracts: Q4_K's min, Q6_K's 32 * scale).
struct KUnit {
  int codes[8];
  int scale[2];
  int min[2];
  float d;
  float dmin;
};

template <int F>
__device__ __forceinline__ void load_kquant_unit(const uint8_t* sb, int j, KUnit& u) {
  if constexpr (F == kQ4_K) {
    u.d = half_bits_to_float(load_u16(sb));
    u.dmin = half_bits_to_float(load_u16(sb + 2));
    int scale = 0, min = 0;
    q4k_scale_min(sb + 4, j, scale, min);
    u.scale[0] = u.scale[1] = scale;
    u.min[0] = u.min[1] = min;
    const uint8_t* qs = sb + 16 + 32 * (j / 2);  // 4-byte aligned: super-blocks are 144 bytes
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint32_t word = *reinterpret_cast<const uint32_t*>(qs + 4 * k);
      u.codes[k] = static_cast<int>((j & 1) ? (word >> 4) & 0x0F0F0F0Fu : word & 0x0F0F0F0Fu);
    }
  } else {  // Q6_K: see q6k_code in quant_units.cuh for the layout
    const int half = j / 4, quarter = j % 4;
    const uint8_t* ql = sb + 64 * half + ((quarter & 1) ? 32 : 0);
    const uint8_t* qh = sb + 128 + 32 * half;
    const int low_shift = quarter >= 2 ? 4 : 0;
    const int high_shift = 2 * quarter;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint32_t low = (load_u32_align2(ql + 4 * k) >> low_shift) & 0x0F0F0F0Fu;
      const uint32_t high = (load_u32_align2(qh + 4 * k) >> high_shift) & 0x03030303u;
      u.codes[k] = static_cast<int>(low | (high << 4));
    }
    const auto* scales = reinterpret_cast<const int8_t*>(sb + 192);
    u.scale[0] = scales[2 * j];
    u.scale[1] = scales[2 * j + 1];
    u.min[0] = 32 * u.scale[0];
    u.min[1] = 32 * u.scale[1];
    u.d = half_bits_to_float(load_u16(sb + 208));
    u.dmin = u.d;
  }
}

template <int F>
__global__ void gemv_kquant_kernel(const uint8_t* weights, size_t row_bytes, int64_t rows,
                                   int64_t cols, Q8Activations x, int64_t t0, int nt, float* y,
                                   int64_t ys) {
  constexpr int kSuperBytes = F == kQ4_K ? kQ4_KBytes : kQ6_KBytes;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const uint8_t* wrow = weights + row * row_bytes;
  const int64_t units = cols / 32;  // a multiple of 8
  const int64_t supers = cols / 256;
  const int j = lane % 8;
  float acc[kGemvMaxTokens] = {};
  // Every lane runs every iteration (the group shuffles need all 32); the 8 lanes of a
  // super-block are valid or not together, since 32 is a multiple of 8.
  for (int64_t u0 = 0; u0 < units; u0 += 32) {
    const int64_t unit = u0 + lane;
    const bool valid = unit < units;
    const int64_t sb = unit / 8;
    KUnit w{};
    if (valid) load_kquant_unit<F>(wrow + sb * kSuperBytes, j, w);
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < nt) {
        const int64_t token = t0 + t;
        int scaled = 0, mins = 0;
        if (valid) {
          int xq[8];
          load_activation_unit(x.qs + token * cols + unit * 32, xq);
          const int32_t* bsums = x.bsums + token * (cols / 16) + sb * 16 + 2 * j;
          scaled =
              w.scale[0] * dot_words(w.codes, xq, 0, 4) + w.scale[1] * dot_words(w.codes, xq, 4, 4);
          mins = w.min[0] * bsums[0] + w.min[1] * bsums[1];
        }
        scaled = group8_sum(scaled);
        mins = group8_sum(mins);
        if (valid && j == 0) {
          const float xd = x.d[token * supers + sb];
          const float v = __fsub_rn(__fmul_rn(__fmul_rn(w.d, xd), static_cast<float>(scaled)),
                                    __fmul_rn(__fmul_rn(w.dmin, xd), static_cast<float>(mins)));
          acc[t] = __fadd_rn(acc[t], v);
        }
      }
    }
  }
  store_row_results(acc, nt, y, ys, row);
}

template <int F>
__global__ void gemv_float_kernel(const uint8_t* weights, size_t row_bytes, int64_t rows,
                                  int64_t cols, const float* x, int64_t xs, int nt, float* y,
                                  int64_t ys) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const uint8_t* wrow = weights + row * row_bytes;
  float acc[kGemvMaxTokens] = {};
  for (int64_t c = threadIdx.x % 32; c < cols; c += 32) {
    const float w = float_element<F>(wrow, c);
#pragma unroll
    for (int t = 0; t < kGemvMaxTokens; ++t) {
      if (t < nt) acc[t] = fmaf(w, x[t * xs + c], acc[t]);
    }
  }
  store_row_results(acc, nt, y, ys, row);
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

tensor::DType gemv_activation_type(tensor::DType weight_type) {
  switch (weight_type) {
    case DType::Q4_0:
    case DType::Q8_0:
      return DType::Q8_0;
    case DType::Q4_1:
      return DType::Q8_1;
    case DType::Q4_K:
    case DType::Q6_K:
      return DType::Q8_K;
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      return DType::F32;
    default:
      return DType::I8;  // no GEMV kernel
  }
}

void launch_gemv_quantized(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                           int64_t cols, const Q8Activations& x, int64_t token_offset,
                           int64_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream) {
  if (rows == 0 || n_tokens == 0) return;
  const auto* p = static_cast<const uint8_t*>(w);
  const int nt = static_cast<int>(n_tokens);
  const unsigned grid = row_blocks(rows);
  switch (type) {
    case DType::Q4_0:
      gemv_legacy_kernel<kQ4_0><<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x,
                                                               token_offset, nt, y, y_stride);
      break;
    case DType::Q4_1:
      gemv_legacy_kernel<kQ4_1><<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x,
                                                               token_offset, nt, y, y_stride);
      break;
    case DType::Q8_0:
      gemv_legacy_kernel<kQ8_0><<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x,
                                                               token_offset, nt, y, y_stride);
      break;
    case DType::Q4_K:
      gemv_kquant_kernel<kQ4_K><<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x,
                                                               token_offset, nt, y, y_stride);
      break;
    case DType::Q6_K:
      gemv_kquant_kernel<kQ6_K><<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x,
                                                               token_offset, nt, y, y_stride);
      break;
    default:
      break;  // the backend refuses unsupported types before launching
  }
}

void launch_gemv_float(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                       int64_t cols, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                       int64_t y_stride, cudaStream_t stream) {
  if (rows == 0 || n_tokens == 0) return;
  const auto* p = static_cast<const uint8_t*>(w);
  const int nt = static_cast<int>(n_tokens);
  const unsigned grid = row_blocks(rows);
  switch (type) {
    case DType::F32:
      gemv_float_kernel<0>
          <<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x, x_stride, nt, y, y_stride);
      break;
    case DType::F16:
      gemv_float_kernel<1>
          <<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x, x_stride, nt, y, y_stride);
      break;
    case DType::BF16:
      gemv_float_kernel<30>
          <<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, x, x_stride, nt, y, y_stride);
      break;
    default:
      break;
  }
}

}  // namespace lumen::backend::cuda
