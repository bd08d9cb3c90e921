// Importance-based KV eviction on the device: the thread mapping and the reductions around
// kv_eviction_math.h's functions, which hold the arithmetic and indexing (tested on the host).
#include <cmath>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kv_eviction_kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kScoreThreads = 256;
constexpr int kScoreWarps = kScoreThreads / 32;
constexpr int kCopyThreads = 256;

// The block's max of v (every thread gets it).
__device__ float block_max(float v, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  float m = shared[0];
  for (int w = 1; w < kScoreWarps; ++w) m = fmaxf(m, shared[w]);
  __syncthreads();
  return m;
}

// The block's sum of v, warps added in order (every thread gets it).
__device__ double block_sum(double v, double* shared) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  double s = 0.0;
  for (int w = 0; w < kScoreWarps; ++w) s += shared[w];
  __syncthreads();
  return s;
}

// One block per (query head blockIdx.x, row row0 + blockIdx.y). A thread's slots are its own
// through all three passes (scores, exponentials, probabilities), so only the reductions meet.
__global__ void __launch_bounds__(kScoreThreads)
    kv_score_rows_kernel(KvScoreArgs a, int64_t row0, int64_t n_slots, float* probs) {
  extern __shared__ float query[];  // head_dim values
  __shared__ float max_part[kScoreWarps];
  __shared__ double sum_part[kScoreWarps];
  const int64_t h = blockIdx.x, r = row0 + blockIdx.y;
  const int64_t kv_head = h / (a.n_heads / a.n_kv_heads);
  for (int64_t d = threadIdx.x; d < a.head_dim; d += blockDim.x) query[d] = kv_score_query(a, r, h, d);
  __syncthreads();
  const int64_t lo = kv_score_first_slot(a, r), pos = a.start_pos + r;
  float* out = probs + (static_cast<int64_t>(blockIdx.y) * a.n_heads + h) * n_slots;
  float m = -INFINITY;
  for (int64_t slot = threadIdx.x; slot < n_slots; slot += blockDim.x) {
    if (slot < lo || slot > pos) {
      out[slot] = 0.0f;
      continue;
    }
    const float s = kv_score_key(a, query, slot, kv_head);
    out[slot] = s;
    m = fmaxf(m, s);
  }
  const float row_max = block_max(m, max_part);
  double sum = 0.0;
  for (int64_t slot = lo + threadIdx.x; slot <= pos; slot += blockDim.x) {
    sum += static_cast<double>(hd::exp_f32(hd::sub_rn(out[slot], row_max)));  // as kv_score_probability
  }
  const float inv = kv_score_inverse(block_sum(sum, sum_part));
  for (int64_t slot = lo + threadIdx.x; slot <= pos; slot += blockDim.x) {
    out[slot] = kv_score_probability(a, out[slot], row_max, inv);
  }
}

__global__ void kv_score_sum_kernel(const float* probs, int64_t n_rows, int64_t n_heads, int64_t n_kv_heads,
                                    int64_t n_slots, float* table) {
  const int64_t group = n_heads / n_kv_heads;
  const int64_t total = n_slots * n_kv_heads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t slot = i / n_kv_heads, kv_head = i % n_kv_heads;
    float sum = table[i];
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t g = 0; g < group; ++g)
        sum = __fadd_rn(sum, probs[(r * n_heads + kv_head * group + g) * n_slots + slot]);
    }
    table[i] = sum;
  }
}

__global__ void kv_gather_kernel(KvGatherArgs a, int64_t n_items, const uint8_t* cache, uint8_t* kept) {
  const int64_t total = n_items * static_cast<int64_t>(a.slice_bytes);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t item = i / static_cast<int64_t>(a.slice_bytes), byte = i % static_cast<int64_t>(a.slice_bytes);
    kept[i] = cache[kv_gather_source(a, item) + static_cast<size_t>(byte)];
  }
}

__global__ void kv_scatter_kernel(KvGatherArgs a, int64_t n_items, const uint8_t* kept, uint8_t* cache) {
  const int64_t total = n_items * static_cast<int64_t>(a.slice_bytes);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t item = i / static_cast<int64_t>(a.slice_bytes), byte = i % static_cast<int64_t>(a.slice_bytes);
    cache[kv_gather_dest(a, item) + static_cast<size_t>(byte)] = kept[i];
  }
}

}  // namespace

void launch_kv_score_rows(const KvScoreArgs& args, int64_t row0, int64_t n_rows, int64_t n_slots, float* probs,
                          cudaStream_t stream) {
  if (n_rows == 0 || args.n_heads == 0) return;
  const dim3 grid(static_cast<unsigned>(args.n_heads), static_cast<unsigned>(n_rows));
  const size_t shared = static_cast<size_t>(args.head_dim) * sizeof(float);
  kv_score_rows_kernel<<<grid, kScoreThreads, shared, stream>>>(args, row0, n_slots, probs);
}

void launch_kv_score_sum(const float* probs, int64_t n_rows, int64_t n_heads, int64_t n_kv_heads, int64_t n_slots,
                         float* table, cudaStream_t stream) {
  if (n_slots == 0 || n_kv_heads == 0) return;
  kv_score_sum_kernel<<<grid_for(n_slots * n_kv_heads, kCopyThreads), kCopyThreads, 0, stream>>>(
      probs, n_rows, n_heads, n_kv_heads, n_slots, table);
}

void launch_kv_gather(const KvGatherArgs& args, int64_t n_items, uint8_t* cache, uint8_t* kept, cudaStream_t stream) {
  const int64_t total = n_items * static_cast<int64_t>(args.slice_bytes);
  if (total == 0) return;
  const unsigned blocks = grid_for(total, kCopyThreads);
  kv_gather_kernel<<<blocks, kCopyThreads, 0, stream>>>(args, n_items, cache, kept);
  kv_scatter_kernel<<<blocks, kCopyThreads, 0, stream>>>(args, n_items, kept, cache);
}

}  // namespace lumen::backend::cuda
