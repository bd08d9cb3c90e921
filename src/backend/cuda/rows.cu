// Row conversions: get_rows (embedding lookup and any table to f32), whole matrices to f16 for
// cuBLAS, and the batch's new keys and values into the paged cache.
#include <algorithm>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/kv_codec.h"
#include "backend/cuda/kv_row_store.cuh"
#include "backend/cuda/weight_type_dispatch.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kThreads = 256;

// Float tables: one thread per element.
template <DType F>
__global__ void get_rows_float_kernel(const uint8_t* table, size_t row_bytes, int64_t cols, const int32_t* ids,
                                      int64_t n, float* out, int64_t os) {
  const int64_t total = n * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / cols, c = i % cols;
    const int64_t id = ids != nullptr ? ids[r] : r;
    out[r * os + c] = hd::float_element<F>(table + id * row_bytes, c);
  }
}

// FP8 E4M3 tables (a compressed KV cache's rows, read back by the composed context shift): one
// thread per element, widened as the CPU widens them (kv_codec.h).
__global__ void get_rows_fp8_kernel(const uint8_t* table, size_t row_bytes, int64_t cols, const int32_t* ids, int64_t n,
                                    float* out, int64_t os) {
  const int64_t total = n * cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / cols, c = i % cols;
    const int64_t id = ids != nullptr ? ids[r] : r;
    out[r * os + c] = hd::fp8_to_float(table[id * row_bytes + c]);
  }
}

// Quantized tables: one thread per 32-value unit.
template <DType F>
__global__ void get_rows_quant_kernel(const uint8_t* table, size_t row_bytes, int64_t cols, const int32_t* ids,
                                      int64_t n, float* out, int64_t os) {
  const int64_t units = cols / 32;
  const int64_t total = n * units;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / units, u = i % units;
    const int64_t id = ids != nullptr ? ids[r] : r;
    float values[32];
    hd::dequantize_unit<F>(table + id * row_bytes, u, values);
    float* dst = out + r * os + u * 32;
    for (int j = 0; j < 32; ++j) dst[j] = values[j];
  }
}

// Float weights (BF16, F32) to f16 for cuBLAS, every step of a prompt: blockIdx.y walks the rows,
// x a row's columns, with additions only (a flat index's 64-bit division per element cost more
// than the element's load and store).
template <DType F>
__global__ void float_to_f16_kernel(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t cols, uint16_t* out) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const uint8_t* row = w + r * static_cast<int64_t>(row_bytes);
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      out[r * cols + c] = float_to_half_bits(hd::float_element<F>(row, c));
    }
  }
}

// Whole matrices to f16 for cuBLAS (the matmuls of more than max_gemv_tokens rows, every step):
// a thread dequantizes one 32-value unit into shared memory, then the block writes its units'
// f16 values, which are contiguous (unit i of the matrix is values 32 i .. 32 i + 31, since
// cols is a multiple of 32), with 16-byte stores of consecutive threads. The plain form (each
// thread storing its own 32 values, 64 bytes past its neighbour's) touched a sector a lane for
// every 2-byte store: on a 1B model that is 1.2 billion such stores a matmul pass, each step of
// a prompt or of more than 8 streams.
constexpr int kUnitVectors = 32 * 2 / 16;  // a unit's f16 values in 16-byte vectors

__device__ __forceinline__ uint32_t pack_halves(float lo, float hi) {
  return static_cast<uint32_t>(float_to_half_bits(lo)) | static_cast<uint32_t>(float_to_half_bits(hi)) << 16;
}

template <DType F>
__global__ void __launch_bounds__(kThreads)
    quant_to_f16_kernel(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t cols, uint16_t* out) {
  __shared__ uint4 staged[kThreads * kUnitVectors];
  const int64_t units = cols / 32;
  const int64_t total = rows * units;
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads; first < total;
       first += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t i = first + t;
    if (i < total) {
      const int64_t r = i / units, u = i % units;
      float values[32];
      hd::dequantize_unit<F>(w + r * row_bytes, u, values);
#pragma unroll
      for (int v = 0; v < kUnitVectors; ++v) {
        const float* x = values + 8 * v;
        staged[t * kUnitVectors + v] = make_uint4(pack_halves(x[0], x[1]), pack_halves(x[2], x[3]),
                                                  pack_halves(x[4], x[5]), pack_halves(x[6], x[7]));
      }
    }
    __syncthreads();
    const int64_t n_units = total - first < kThreads ? total - first : kThreads;
    auto* dst = reinterpret_cast<uint4*>(out + first * 32);  // 64-byte aligned when out is
    for (int64_t v = t; v < n_units * kUnitVectors; v += kThreads) dst[v] = staged[v];
    __syncthreads();  // the block's stores have read the stage before the next units overwrite it
  }
}

// One block per token; no V (v_cache null) for a latent cache, whose values are its keys.
__global__ void store_kv_kernel(const float* k, int64_t ks, const float* v, int64_t vs, int64_t kv_dim,
                                const int64_t* dest_rows, uint8_t* k_cache, size_t k_row_bytes, tensor::DType k_type,
                                uint8_t* v_cache, size_t v_row_bytes, tensor::DType v_type) {
  const int64_t token = blockIdx.x;
  const int64_t row = dest_rows[token];
  if (row < 0) return;
  store_kv_row(k_type, k + token * ks, kv_dim, k_cache + row * k_row_bytes);
  if (v_cache != nullptr) store_kv_row(v_type, v + token * vs, kv_dim, v_cache + row * v_row_bytes);
}

struct LaunchNothing {
  template <DType>
  void operator()() const {}
};

constexpr bool is_float_type(DType f) { return f == DType::F32 || f == DType::F16 || f == DType::BF16; }

}  // namespace

bool rows_supported(tensor::DType type) {
  return type == DType::FP8_E4M3 || dispatch_weight_type(type, LaunchNothing{});
}

void launch_get_rows(tensor::DType type, const void* table, size_t table_row_bytes, int64_t cols,
                     const int32_t* ids, int64_t n, float* out, int64_t out_stride,
                     cudaStream_t stream) {
  if (n == 0 || cols == 0) return;
  const auto* t = static_cast<const uint8_t*>(table);
  if (type == DType::FP8_E4M3) {
    get_rows_fp8_kernel<<<grid_for(n * cols, kThreads), kThreads, 0, stream>>>(t, table_row_bytes, cols, ids, n, out,
                                                                               out_stride);
    return;
  }
  dispatch_weight_type(type, [&]<DType F>() {
    if constexpr (is_float_type(F)) {
      get_rows_float_kernel<F><<<grid_for(n * cols, kThreads), kThreads, 0, stream>>>(
          t, table_row_bytes, cols, ids, n, out, out_stride);
    } else {
      get_rows_quant_kernel<F><<<grid_for(n * (cols / 32), kThreads), kThreads, 0, stream>>>(
          t, table_row_bytes, cols, ids, n, out, out_stride);
    }
  });
}

void launch_dequantize_to_f16(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                              int64_t cols, uint16_t* out, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const auto* p = static_cast<const uint8_t*>(w);
  dispatch_weight_type(type, [&]<DType F>() {
    if constexpr (is_float_type(F)) {
      const dim3 grid(static_cast<unsigned>(std::clamp<int64_t>((cols + kThreads - 1) / kThreads, 1, 8)),
                      static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535)));
      float_to_f16_kernel<F><<<grid, kThreads, 0, stream>>>(p, row_bytes, rows, cols, out);
    } else {
      quant_to_f16_kernel<F><<<grid_for(rows * (cols / 32), kThreads), kThreads, 0, stream>>>(
          p, row_bytes, rows, cols, out);
    }
  });
}

void launch_store_kv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t kv_dim,
                     int64_t n_tokens, const int64_t* dest_rows, void* k_cache, size_t k_row_bytes,
                     tensor::DType k_type, void* v_cache, size_t v_row_bytes, tensor::DType v_type,
                     cudaStream_t stream) {
  if (n_tokens == 0) return;
  store_kv_kernel<<<static_cast<unsigned>(n_tokens), 128, 0, stream>>>(
      k, k_stride, v, v_stride, kv_dim, dest_rows, static_cast<uint8_t*>(k_cache), k_row_bytes, k_type,
      static_cast<uint8_t*>(v_cache), v_row_bytes, v_type);
}

}  // namespace lumen::backend::cuda
