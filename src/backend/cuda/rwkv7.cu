// RWKV 7's kernels: the element-wise rwkv7_* ops and the wkv7 state update. The arithmetic is
// rwkv7_math.h's, the CPU's in its order: the per-head sums (the key's length, the bonus, the
// wkv's dot products) run in one thread each, in channel order (or the CPU's 8 partial sums);
// only the norm's two double sums are shared by a block, which moves them far below an f32 ulp.
#include <cmath>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/rwkv7_kernels.h"
#include "backend/cuda/rwkv7_math.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 256;

// A block per (row, group). y may be x: each thread writes only the elements it read.
__global__ void __launch_bounds__(kThreads)
    rwkv7_norm_kernel(const float* x, int64_t xs, const float* weight, const float* bias, double eps, int64_t group,
                      int64_t groups_per_row, float* y, int64_t ys) {
  __shared__ double partial[kThreads / 32];
  const int64_t row = blockIdx.x / groups_per_row, first = (blockIdx.x % groups_per_row) * group;
  const float* src = x + row * xs + first;
  float* dst = y + row * ys + first;
  double mean, squares;
  block_row_moments(src, group, partial, mean, squares);
  const float inv = hd::rwkv7_norm_inverse(squares, group, eps);
  for (int64_t c = threadIdx.x; c < group; c += blockDim.x) {
    dst[c] = hd::rwkv7_norm_value(src[c], mean, inv, weight[first + c], bias[first + c]);
  }
}

__global__ void token_shift_kernel(TokenShiftParams p) {
  const int64_t total = p.n_mix * p.rows * p.width;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t c = i % p.width, t = (i / p.width) % p.rows, m = i / (p.width * p.rows);
    const int32_t prev = p.prev[t];
    if (prev == kNoSequence) continue;
    const float before = prev >= 0 ? p.x[prev * p.x_stride + c] : p.shift_rows[-1 - prev][c];
    p.out[(m * p.rows + t) * p.out_stride + c] =
        hd::token_shift_value(p.x[t * p.x_stride + c], before, p.mixes[m * p.mix_stride + c]);
  }
}

__global__ void store_shift_kernel(TokenShiftParams p) {
  const int64_t total = p.n_seqs * p.width;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t s = i / p.width, c = i % p.width;
    const int32_t last = p.last_rows[s];
    if (last >= 0) p.shift_rows[s][c] = p.x[last * p.x_stride + c];
  }
}

__global__ void activation_kernel(float* x, int64_t xs, int64_t rows, int64_t width, int f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * width; i += step) {
    float& v = x[(i / width) * xs + i % width];
    v = hd::rwkv7_activation(v, f);
  }
}

__global__ void value_residual_kernel(float* v, int64_t vs, const float* first, int64_t fs, const float* mix,
                                      int64_t ms, const float* v0, int64_t rows, int64_t width) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * width; i += step) {
    const int64_t t = i / width, c = i % width;
    float& value = v[t * vs + c];
    value = hd::value_residual(value, first[t * fs + c], mix[t * ms + c], v0[c]);
  }
}

// A thread per (row, head): the head's sums in channel order, as the CPU's row loop.
__global__ void keys_kernel(Rwkv7KeysParams p) {
  const int64_t heads = p.width / p.head_size;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.rows * heads) return;
  const int64_t at = (i / heads) * p.stride + (i % heads) * p.head_size, c = (i % heads) * p.head_size;
  hd::rwkv7_keys_head(p.w + at, p.a + at, p.k + at, p.kk + at, p.b + at, p.w0 + c, p.a0 + c, p.k_k + c, p.k_a + c,
                      p.head_size);
}

__global__ void bonus_gate_kernel(Rwkv7BonusGateParams p) {
  const int64_t heads = p.width / p.head_size;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.rows * heads) return;
  const int64_t t = i / heads, c = (i % heads) * p.head_size, at = t * p.in_stride + c;
  hd::rwkv7_bonus_gate_head(p.out + t * p.out_stride + c, p.r + at, p.k + at, p.v + at, p.g + at, p.r_k + c,
                            p.head_size);
}

// A block per (sequence, head), thread i holding state row i in registers for the whole
// sequence; each token's head slices of r, w, k, a and b staged in shared memory. Heads of up to
// kWkv7HeadSize channels; threads past the head size only take part in the barriers.
__global__ void __launch_bounds__(kWkv7HeadSize) wkv7_kernel(Wkv7Params p) {
  constexpr int MAX = static_cast<int>(kWkv7HeadSize);
  __shared__ float r[MAX], w[MAX], k[MAX], a[MAX], b[MAX];
  const Wkv7SequenceRecord seq = p.seqs[blockIdx.x / p.heads];
  const int64_t head = blockIdx.x % p.heads, size = p.head_size;
  const int i = static_cast<int>(threadIdx.x);
  const bool active = i < size;
  float* state = seq.state + (head * size + i) * size;
  float s[MAX];
#pragma unroll
  for (int j = 0; j < MAX; ++j) s[j] = active && j < size ? state[j] : 0.0f;
  for (int64_t t = 0; t < seq.n_tokens; ++t) {
    const int64_t row = (seq.first_token + t) * p.stride + head * size;
    float vi = 0.0f;
    if (active) {
      r[i] = p.r[row + i];
      w[i] = p.w[row + i];
      k[i] = p.k[row + i];
      a[i] = p.a[row + i];
      b[i] = p.b[row + i];
      vi = p.v[row + i];
    }
    __syncthreads();
    if (active) {
      p.out[(seq.first_token + t) * p.out_stride + head * size + i] =
          hd::wkv7_row<MAX>(s, r, w, k, a, b, vi, static_cast<int>(size));
    }
    __syncthreads();  // before the next token overwrites the slices
  }
  if (active) {
#pragma unroll
    for (int j = 0; j < MAX; ++j) {
      if (j < size) state[j] = s[j];
    }
  }
}

}  // namespace

void launch_rwkv7_norm(const float* x, int64_t x_stride, const float* weight, const float* bias, double eps,
                       int64_t group, float* y, int64_t y_stride, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  const int64_t groups = width / group;
  // Heads of 64 need 2 warps, not 8.
  const int threads = group <= 64 ? 64 : kThreads;
  rwkv7_norm_kernel<<<static_cast<unsigned>(rows * groups), threads, 0, stream>>>(x, x_stride, weight, bias, eps, group,
                                                                                  groups, y, y_stride);
}

void launch_rwkv7_token_shift(const TokenShiftParams& params, cudaStream_t stream) {
  if (params.rows > 0 && params.width > 0) {
    token_shift_kernel<<<grid_for(params.n_mix * params.rows * params.width, kThreads), kThreads, 0, stream>>>(params);
  }
  if (params.n_seqs > 0 && params.width > 0) {
    store_shift_kernel<<<grid_for(params.n_seqs * params.width, kThreads), kThreads, 0, stream>>>(params);
  }
}

void launch_rwkv7_activation(float* x, int64_t x_stride, int64_t rows, int64_t width, int f, cudaStream_t stream) {
  if (rows * width == 0) return;
  activation_kernel<<<grid_for(rows * width, kThreads), kThreads, 0, stream>>>(x, x_stride, rows, width, f);
}

void launch_rwkv7_value_residual(float* v, int64_t v_stride, const float* first, int64_t first_stride, const float* mix,
                                 int64_t mix_stride, const float* v0, int64_t rows, int64_t width,
                                 cudaStream_t stream) {
  if (rows * width == 0) return;
  value_residual_kernel<<<grid_for(rows * width, kThreads), kThreads, 0, stream>>>(v, v_stride, first, first_stride,
                                                                                   mix, mix_stride, v0, rows, width);
}

void launch_rwkv7_keys(const Rwkv7KeysParams& params, cudaStream_t stream) {
  const int64_t threads = params.rows * (params.width / params.head_size);
  if (threads == 0) return;
  keys_kernel<<<static_cast<unsigned>((threads + 127) / 128), 128, 0, stream>>>(params);
}

void launch_rwkv7_bonus_gate(const Rwkv7BonusGateParams& params, cudaStream_t stream) {
  const int64_t threads = params.rows * (params.width / params.head_size);
  if (threads == 0) return;
  bonus_gate_kernel<<<static_cast<unsigned>((threads + 127) / 128), 128, 0, stream>>>(params);
}

void launch_rwkv_wkv7(const Wkv7Params& params, cudaStream_t stream) {
  if (params.n_seqs == 0 || params.heads == 0) return;
  wkv7_kernel<<<static_cast<unsigned>(params.n_seqs * params.heads), static_cast<unsigned>(kWkv7HeadSize), 0, stream>>>(
      params);
}

}  // namespace lumen::backend::cuda
