// Pointwise ops and rms_norm. Each mirrors the CPU backend's f32 expression operation by
// operation (backend/cpu/elementwise.cc, activation.cc, rms_norm.cc); only expf differs from
// the CPU's exp by an ulp or two.
#include <cmath>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 256;

// Calls fn(row, col) for every element of a rows x cols matrix (grid-stride).
template <typename Fn>
__device__ __forceinline__ void for_each_element(int64_t rows, int64_t cols, Fn fn) {
  const int64_t total = rows * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    fn(i / cols, i % cols);
  }
}

__global__ void add_kernel(const float* a, int64_t as, const float* b, int64_t bs, float* out,
                           int64_t os, int64_t rows, int64_t cols) {
  for_each_element(rows, cols, [&](int64_t r, int64_t c) {
    out[r * os + c] = __fadd_rn(a[r * as + c], b[r * bs + c]);
  });
}

__global__ void add_row_kernel(float* x, int64_t xs, const float* row, int64_t rows, int64_t cols) {
  for_each_element(rows, cols,
                   [&](int64_t r, int64_t c) { x[r * xs + c] = __fadd_rn(x[r * xs + c], row[c]); });
}

__global__ void scale_kernel(float* x, int64_t xs, float factor, int64_t rows, int64_t cols) {
  for_each_element(rows, cols,
                   [&](int64_t r, int64_t c) { x[r * xs + c] = __fmul_rn(x[r * xs + c], factor); });
}

// The normalized Walsh-Hadamard transform of each head_dim slice of each row (head_dim a power
// of two, at most kMaxHadamard): one block per slice, in shared memory, with backend/cpu/
// hadamard.cc's butterflies in its order (pass by pass, a + b and a - b), then x * norm, the
// norm computed on the host as the CPU computes it: the same bits as the CPU backend.
constexpr int kMaxHadamard = 1024;

__global__ void hadamard_kernel(float* x, int64_t xs, int64_t head_dim, int64_t heads_per_row, float norm) {
  __shared__ float v[kMaxHadamard];
  const int64_t r = blockIdx.x / heads_per_row, h = blockIdx.x % heads_per_row;
  float* slice = x + r * xs + h * head_dim;
  for (int64_t i = threadIdx.x; i < head_dim; i += blockDim.x) v[i] = slice[i];
  __syncthreads();
  for (int64_t span = 1; span < head_dim; span *= 2) {
    for (int64_t p = threadIdx.x; p < head_dim / 2; p += blockDim.x) {
      const int64_t a = (p / span) * 2 * span + p % span, b = a + span;
      const float sum = __fadd_rn(v[a], v[b]), difference = __fsub_rn(v[a], v[b]);
      v[a] = sum;
      v[b] = difference;
    }
    __syncthreads();
  }
  for (int64_t i = threadIdx.x; i < head_dim; i += blockDim.x) slice[i] = __fmul_rn(v[i], norm);
}

__global__ void swiglu_kernel(const float* gate, int64_t gs, const float* up, int64_t us,
                              float* out, int64_t os, int64_t rows, int64_t cols) {
  for_each_element(rows, cols,
                   [&](int64_t r, int64_t c) { out[r * os + c] = swiglu_value(gate[r * gs + c], up[r * us + c]); });
}

__global__ void geglu_kernel(const float* gate, int64_t gs, const float* up, int64_t us, float* out,
                             int64_t os, int64_t rows, int64_t cols, const uint16_t* table) {
  for_each_element(rows, cols, [&](int64_t r, int64_t c) {
    const float g = gate[r * gs + c];
    float gelu;
    if (g <= -10.0f) {
      gelu = 0.0f;
    } else if (g >= 10.0f) {
      gelu = g;
    } else {
      gelu = half_bits_to_float(table[float_to_half_bits(g)]);
    }
    out[r * os + c] = __fmul_rn(gelu, up[r * us + c]);
  });
}

// One block per row: the sum of squares (each square rounded to f32 first, as ggml does) in
// double, then y = (x * scale) * weight.
// With ADD (add_rms_norm), the row normalised is a + b, written to `added` first: the same
// __fadd_rn as add_kernel, so the result is bit for bit add then rms_norm. Each thread reads back
// only the elements it wrote itself, so the second pass needs no more synchronisation than the
// plain kernel's; added may alias a or b (element by element), y may alias a or b but not added.
template <bool ADD>
__global__ void rms_norm_kernel(const float* x, int64_t xs, const float* b, int64_t bs, float* added,
                                int64_t adds, const float* weight, float eps, float* y, int64_t ys,
                                int64_t cols) {
  __shared__ double partial[kThreads / 32];
  __shared__ float shared_scale;
  const float* row = x + static_cast<int64_t>(blockIdx.x) * xs;
  float* dst = y + static_cast<int64_t>(blockIdx.x) * ys;
  if constexpr (ADD) {
    const float* b_row = b + static_cast<int64_t>(blockIdx.x) * bs;
    float* sum_row = added + static_cast<int64_t>(blockIdx.x) * adds;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum_row[c] = __fadd_rn(row[c], b_row[c]);
    row = sum_row;
  }
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = row[c];
    sum += static_cast<double>(__fmul_rn(v, v));
  }
  const float scale = rms_norm_scale(sum, cols, eps, partial, &shared_scale);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    dst[c] = __fmul_rn(__fmul_rn(row[c], scale), weight[c]);
  }
}

}  // namespace

void launch_add(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* out,
                int64_t out_stride, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  add_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(a, a_stride, b, b_stride,
                                                                       out, out_stride, rows, cols);
}

void launch_add_row(float* x, int64_t x_stride, const float* row, int64_t rows, int64_t cols,
                    cudaStream_t stream) {
  if (rows * cols == 0) return;
  add_row_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(x, x_stride, row, rows,
                                                                           cols);
}

void launch_scale(float* x, int64_t x_stride, float factor, int64_t rows, int64_t cols,
                  cudaStream_t stream) {
  if (rows * cols == 0) return;
  scale_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(x, x_stride, factor, rows,
                                                                         cols);
}

void launch_hadamard(float* x, int64_t x_stride, int64_t rows, int64_t cols, int64_t head_dim, cudaStream_t stream) {
  if (rows * cols == 0) return;
  const float norm = 1.0f / std::sqrt(static_cast<float>(head_dim));  // as backend/cpu/hadamard.cc
  const int64_t heads = cols / head_dim;
  hadamard_kernel<<<static_cast<unsigned>(rows * heads), kThreads, 0, stream>>>(x, x_stride, head_dim, heads, norm);
}

bool hadamard_width_supported(int64_t head_dim) { return head_dim <= kMaxHadamard; }

void launch_swiglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                   float* out, int64_t out_stride, int64_t rows, int64_t cols,
                   cudaStream_t stream) {
  if (rows * cols == 0) return;
  swiglu_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(
      gate, gate_stride, up, up_stride, out, out_stride, rows, cols);
}

void launch_geglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  float* out, int64_t out_stride, int64_t rows, int64_t cols,
                  const uint16_t* gelu_table, cudaStream_t stream) {
  if (rows * cols == 0) return;
  geglu_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, stream>>>(
      gate, gate_stride, up, up_stride, out, out_stride, rows, cols, gelu_table);
}

void launch_rms_norm(const float* x, int64_t x_stride, const float* weight, float eps, float* y,
                     int64_t y_stride, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  rms_norm_kernel<false><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x, x_stride, nullptr, 0, nullptr, 0, weight, eps, y, y_stride, cols);
}

void launch_add_rms_norm(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* sum,
                         int64_t sum_stride, const float* weight, float eps, float* y, int64_t y_stride,
                         int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  rms_norm_kernel<true><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      a, a_stride, b, b_stride, sum, sum_stride, weight, eps, y, y_stride, cols);
}

}  // namespace lumen::backend::cuda
