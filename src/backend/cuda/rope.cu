// Rotary embedding, one block per token (rope_device.cuh: the CPU backend's arithmetic).
#include "backend/cuda/kernels.h"
#include "backend/cuda/rope_device.cuh"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 128;

template <bool LOADS_FIRST>
__global__ void __launch_bounds__(kThreads)
    rope_kernel(float* x, int64_t row_stride, int64_t n_heads, const int32_t* positions, RopeKernelParams p) {
  extern __shared__ float shared[];
  const int64_t token = blockIdx.x;
  const float* cos_sin = rope_token_table(shared, positions[token], p);
  rope_token_heads<LOADS_FIRST>(x, row_stride, n_heads, token, cos_sin, p);
}

}  // namespace

void launch_rope(float* x, int64_t row_stride, int64_t n_heads, int64_t n_tokens,
                 const int32_t* positions, const RopeKernelParams& params, cudaStream_t stream) {
  if (n_tokens == 0 || n_heads == 0) return;
  const size_t shared = rope_table_bytes(params);
  if (params.loads_first) {
    rope_kernel<true>
        <<<static_cast<unsigned>(n_tokens), kThreads, shared, stream>>>(x, row_stride, n_heads, positions, params);
  } else {
    rope_kernel<false>
        <<<static_cast<unsigned>(n_tokens), kThreads, shared, stream>>>(x, row_stride, n_heads, positions, params);
  }
}

}  // namespace lumen::backend::cuda
