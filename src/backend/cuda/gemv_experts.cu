// The experts of a routed MoE layer on the device (Backend::moe_ffn_routed), for the few tokens
// of a decode step: one launch runs gate and up for every (token, slot) pair, the expert read
// from the router's ids in device memory, and one more runs down; a third adds each token's
// slots. No id comes to the host, so a step stays free of transfers (and can be a CUDA graph).
//
// Each pair reads its expert's rows itself: a step of t tokens reads up to t x n_used expert
// matrices where grouping by expert would read each chosen one once. For decode (a token or a
// few) few pairs share an expert; larger batches take the grouped host path
// (cuda_routed_moe.cc).
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/routed_moe_kernels.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kRowsPerBlock = 4;  // one warp per row, as gemv.cu
constexpr int kThreads = 32 * kRowsPerBlock;

// Block (x: rows, y: pair, z: matrix).
template <DType F>
__global__ void __launch_bounds__(kThreads)
    gemv_experts_kernel(const __grid_constant__ ExpertGemvArgs a, const Q8Activations x) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= a.rows) return;  // the whole warp
  const int64_t pair = blockIdx.y;
  const int m = static_cast<int>(blockIdx.z);
  const int32_t expert = a.ids[pair];
  float acc[1] = {0.0f};
  if (expert >= 0 && expert < a.n_experts) {  // the same for the whole warp
    const uint8_t* wrow = a.weights[m] + static_cast<size_t>(expert) * a.expert_bytes + row * a.row_bytes;
    quantized_row_dot<F, 1>(wrow, a.cols, x, pair / a.pairs_per_x_row, 1, acc, static_cast<int>(threadIdx.x % 32));
  }
  store_warp_results<1>(acc, 1, a.y[m] + pair * a.y_stride, a.y_stride, row);
}

constexpr int kCombineThreads = 256;

// Block (x: a chunk of columns, y: token).
__global__ void __launch_bounds__(kCombineThreads)
    combine_experts_kernel(const __grid_constant__ CombineExpertsArgs a) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kCombineThreads + threadIdx.x;
  const int64_t t = blockIdx.y;
  if (c >= a.cols) return;
  const float* w = a.weights + t * a.k;
  const float* y = a.y + t * a.k * a.y_stride + c;
  float acc = __fmul_rn(y[0], w[0]);
  for (int64_t s = 1; s < a.k; ++s) acc = __fadd_rn(acc, __fmul_rn(y[s * a.y_stride], w[s]));
  if (a.shared != nullptr) {
    const float gate = a.shared_logit != nullptr ? routing::shared_expert_gate(a.shared_logit[t]) : 1.0f;
    acc = __fadd_rn(acc, __fmul_rn(a.shared[t * a.shared_stride + c], gate));
  }
  a.out[t * a.out_stride + c] = acc;
}

}  // namespace

bool launch_gemv_experts(DType type, const ExpertGemvArgs& args, const Q8Activations& x, cudaStream_t stream) {
  if (args.rows == 0 || args.pairs == 0) return true;
  const dim3 grid(static_cast<unsigned>((args.rows + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>(args.pairs), static_cast<unsigned>(args.n_matrices));
  const auto launch = [&]<DType F>() { gemv_experts_kernel<F><<<grid, kThreads, 0, stream>>>(args, x); };
  return dispatch_quantized_gemv(type, launch);
}

void launch_combine_experts(const CombineExpertsArgs& args, cudaStream_t stream) {
  if (args.n_tokens == 0 || args.cols == 0) return;
  const dim3 grid(static_cast<unsigned>((args.cols + kCombineThreads - 1) / kCombineThreads),
                  static_cast<unsigned>(args.n_tokens));
  combine_experts_kernel<<<grid, kCombineThreads, 0, stream>>>(args);
}

}  // namespace lumen::backend::cuda
