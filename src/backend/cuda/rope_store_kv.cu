// A layer's rope and K/V store in one launch (CudaBackend::rope_store_kv): one block per token
// rotates the token's query and key heads, waits for itself, then stores the rotated keys and
// the values into their cache row. Each step is rope.cu's or store_kv's device function, so the
// bits are those three launches' (rope, rope, store_kv), and a decode step launches two kernels
// fewer a layer.
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/kv_row_store.cuh"
#include "backend/cuda/rope_device.cuh"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 128;

template <bool LOADS_FIRST>
__global__ void __launch_bounds__(kThreads) rope_store_kv_kernel(RopeStoreKvArgs a) {
  extern __shared__ float shared[];
  dependents_may_launch();  // a dependent launch (dependent_launch.cuh): q, k and v are the GEMV's
  wait_for_prerequisites();
  const int64_t token = blockIdx.x;
  const float* cos_sin = rope_token_table(shared, a.positions[token], a.rope);
  rope_token_heads<LOADS_FIRST>(a.q, a.head_stride_q, a.q_heads, token, cos_sin, a.rope);
  rope_token_heads<LOADS_FIRST>(a.k, a.head_stride_k, a.kv_heads, token, cos_sin, a.rope);
  // The block's rotated keys, written to global memory by its threads, are visible to all of
  // them after the barrier.
  __syncthreads();
  const int64_t row = a.dest_rows[token];
  if (row < 0) return;  // a row no sequence owns
  const int64_t kv_dim = a.kv_heads * a.head_stride_k;
  store_kv_row(a.k_type, a.k + token * kv_dim, kv_dim, a.k_cache + row * static_cast<int64_t>(a.k_row_bytes));
  if (a.v_cache != nullptr) {
    store_kv_row(a.v_type, a.v + token * a.v_stride, kv_dim, a.v_cache + row * static_cast<int64_t>(a.v_row_bytes));
  }
}

}  // namespace

void launch_rope_store_kv(const RopeStoreKvArgs& args, int64_t n_tokens, cudaStream_t stream) {
  if (n_tokens == 0) return;
  const size_t shared = rope_table_bytes(args.rope);
  const auto grid = static_cast<unsigned>(n_tokens);
  if (args.rope.loads_first) {
    launch_kernel(rope_store_kv_kernel<true>, grid, kThreads, shared, stream, args);
  } else {
    launch_kernel(rope_store_kv_kernel<false>, grid, kThreads, shared, stream, args);
  }
}

}  // namespace lumen::backend::cuda
