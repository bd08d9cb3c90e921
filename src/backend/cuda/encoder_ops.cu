// The LayerNorm blocks' kernels (layer_norm, gelu_erf, gelu_tanh) and an encoder's attention
// (bidirectional_attention). The arithmetic is encoder_math.h's, the CPU backend's in double;
// what differs from the CPU is only the order of the LayerNorm's two row sums (a block's
// threads each sum a strided part), which moves a double sum far below an f32 ulp.
#include <cmath>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/encoder_kernels.h"
#include "backend/cuda/encoder_math.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kNormThreads = 256;
constexpr int kElementThreads = 256;
constexpr int kAttentionWarps = 4;

__device__ __forceinline__ double warp_max_f64(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// One block per row. y may be x: each thread writes only the elements it read.
__global__ void __launch_bounds__(kNormThreads)
    layer_norm_kernel(const float* x, int64_t xs, const float* weight, const float* bias, float eps, float* y,
                      int64_t ys, int64_t cols) {
  __shared__ double partial[kNormThreads / 32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * xs;
  float* dst = y + static_cast<int64_t>(blockIdx.x) * ys;
  double mean, squares;
  block_row_moments(row, cols, partial, mean, squares);
  const double inverse = hd::layer_norm_inverse(squares, cols, eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    dst[c] = hd::layer_norm_value(row[c], mean, inverse, weight[c], bias[c]);
  }
}

template <bool ERF>
__global__ void gelu_kernel(float* x, int64_t xs, int64_t rows, int64_t cols, const uint16_t* table) {
  const int64_t total = rows * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    float& v = x[(i / cols) * xs + i % cols];
    if constexpr (ERF) {
      v = hd::gelu_erf_value(v);
    } else if (v <= -10.0f) {  // ggml's table (backend/common/gelu_table.h): its ends, then f16 in and out
      v = 0.0f;
    } else if (v < 10.0f) {
      v = half_bits_to_float(table[float_to_half_bits(v)]);
    }
  }
}

__global__ void activation_kernel(float* x, int64_t xs, int64_t rows, int64_t cols, int kind) {
  const int64_t total = rows * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    float& v = x[(i / cols) * xs + i % cols];
    v = hd::activation_value(kind, v);
  }
}

// One warp per (row, query head): lane j scores keys j, j + 32, ... of the row's sequence; a
// first pass finds the max score, the second broadcasts each key's exp(score - max) in key order
// so that every lane adds the sum and its values (dims lane, lane + 32, ...) in the CPU's order.
template <int DPL>
__global__ void __launch_bounds__(32 * kAttentionWarps) bidirectional_attention_kernel(BidirectionalAttentionParams p) {
  const int64_t warp_index = static_cast<int64_t>(blockIdx.x) * kAttentionWarps + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp_index >= p.rows * p.n_heads) return;  // warp-uniform
  const int64_t row = warp_index / p.n_heads, head = warp_index % p.n_heads;
  const int64_t first = p.row_sequences[2 * row], count = p.row_sequences[2 * row + 1];
  if (count <= 0) return;  // a row no sequence owns keeps what out held
  const float* q = p.q + row * p.q_stride + head * p.head_dim;
  const int64_t kv_column = (head / p.group) * p.head_dim;
  const auto key = [&](int64_t j) { return p.k + (first + j) * p.kv_stride + kv_column; };

  double most = -INFINITY;
  for (int64_t j = lane; j < count; j += 32) most = fmax(most, hd::scaled_dot(q, key(j), p.head_dim, p.scale));
  most = warp_max_f64(most);

  double sum = 0.0, acc[DPL];
#pragma unroll
  for (int i = 0; i < DPL; ++i) acc[i] = 0.0;
  for (int64_t j0 = 0; j0 < count; j0 += 32) {
    const int64_t j = j0 + lane;
    const double prob = j < count ? hd::exp_f64(hd::sub_rn(hd::scaled_dot(q, key(j), p.head_dim, p.scale), most)) : 0.0;
    const int in_tile = static_cast<int>(min(int64_t{32}, count - j0));
    for (int t = 0; t < in_tile; ++t) {
      const double pt = __shfl_sync(0xffffffffu, prob, t);
      sum = hd::add_rn(sum, pt);
      const float* value = p.v + (first + j0 + t) * p.kv_stride + kv_column;
#pragma unroll
      for (int i = 0; i < DPL; ++i) {
        const int64_t d = lane + 32 * i;
        if (d < p.head_dim) acc[i] = hd::add_rn(acc[i], hd::mul_rn(pt, static_cast<double>(value[d])));
      }
    }
  }
  float* out = p.out + row * p.out_stride + head * p.head_dim;
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < p.head_dim) out[d] = static_cast<float>(hd::div_rn(acc[i], sum));
  }
}

}  // namespace

void launch_layer_norm(const float* x, int64_t x_stride, const float* weight, const float* bias, float eps, float* y,
                       int64_t y_stride, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kNormThreads, 0, stream>>>(x, x_stride, weight, bias, eps, y,
                                                                              y_stride, cols);
}

void launch_gelu_erf(float* x, int64_t x_stride, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  gelu_kernel<true>
      <<<grid_for(rows * cols, kElementThreads), kElementThreads, 0, stream>>>(x, x_stride, rows, cols, nullptr);
}

void launch_activation(float* x, int64_t x_stride, int64_t rows, int64_t cols, int kind, cudaStream_t stream) {
  if (rows * cols == 0) return;
  activation_kernel<<<grid_for(rows * cols, kElementThreads), kElementThreads, 0, stream>>>(x, x_stride, rows, cols,
                                                                                            kind);
}

void launch_gelu_tanh(float* x, int64_t x_stride, int64_t rows, int64_t cols, const uint16_t* gelu_table,
                      cudaStream_t stream) {
  if (rows * cols == 0) return;
  gelu_kernel<false>
      <<<grid_for(rows * cols, kElementThreads), kElementThreads, 0, stream>>>(x, x_stride, rows, cols, gelu_table);
}

void launch_bidirectional_attention(const BidirectionalAttentionParams& params, cudaStream_t stream) {
  const int64_t warps = params.rows * params.n_heads;
  if (warps == 0) return;
  const auto grid = static_cast<unsigned>((warps + kAttentionWarps - 1) / kAttentionWarps);
  const unsigned threads = 32 * kAttentionWarps;
  if (params.head_dim <= 64) {
    bidirectional_attention_kernel<2><<<grid, threads, 0, stream>>>(params);
  } else if (params.head_dim <= 128) {
    bidirectional_attention_kernel<4><<<grid, threads, 0, stream>>>(params);
  } else {
    bidirectional_attention_kernel<kMaxEncoderHeadDim / 32><<<grid, threads, 0, stream>>>(params);
  }
}

namespace {

__global__ void pack_heads_f16_kernel(const float* x, int64_t xs, int64_t rows, int64_t heads, int64_t dims,
                                      int64_t padded, uint16_t* out) {
  const int64_t total = rows * heads * padded;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t row = i / (heads * padded), head = i / padded % heads, d = i % padded;
    out[i] = d < dims ? float_to_half_bits(x[row * xs + head * dims + d]) : uint16_t{0};
  }
}

}  // namespace

void launch_pack_heads_f16(const float* x, int64_t x_stride, int64_t rows, int64_t heads, int64_t dims,
                           int64_t padded_dims, uint16_t* out, cudaStream_t stream) {
  if (rows * heads * padded_dims == 0) return;
  pack_heads_f16_kernel<<<grid_for(rows * heads * padded_dims, kElementThreads), kElementThreads, 0, stream>>>(
      x, x_stride, rows, heads, dims, padded_dims, out);
}

}  // namespace lumen::backend::cuda
