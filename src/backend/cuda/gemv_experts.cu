// The experts of a routed MoE layer on the device (Backend::moe_ffn_routed), for the tokens of
// a decode step and for prompts whose experts are small (routed_moe_plan.h): the (token, slot)
// pairs are grouped by the expert they chose (one small launch), then one launch runs gate and
// up for every group and one runs down, each group's expert rows read once for up to 8 of its
// pairs; a last launch adds each token's slots. No id comes to the host, so a step stays free of
// transfers and the launches have the same arguments every step (the grid is sized for the most
// groups a step can have; the blocks of groups a step does not have return at once), which a
// CUDA graph needs.
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/routed_moe_kernels.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kGroupThreads = 1024;

// Counts each expert's pairs, numbers the experts that have any in increasing order (warp 0: each
// lane a contiguous run of experts, then a scan over the lanes), and places each pair in its group
// (the order within a group does not matter: each pair's products are its own).
__global__ void __launch_bounds__(kGroupThreads)
    group_pairs_kernel(const int32_t* ids, int64_t pairs, int64_t n_experts, ExpertPairGroups out) {
  __shared__ int32_t count[kMaxDeviceRoutedExperts];
  __shared__ int32_t cursor[kMaxDeviceRoutedExperts];
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t e = tid; e < n_experts; e += kGroupThreads) count[e] = 0;
  __syncthreads();
  for (int64_t p = tid; p < pairs; p += kGroupThreads) {
    const int32_t e = ids[p];
    if (e >= 0 && e < n_experts) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  if (tid < 32) {
    const int64_t per_lane = (n_experts + 31) / 32;
    const int64_t first = tid * per_lane, last = min(n_experts, first + per_lane);
    int32_t groups = 0, members = 0;
    for (int64_t e = first; e < last; ++e) {
      groups += count[e] > 0 ? 1 : 0;
      members += count[e];
    }
    // Exclusive scans of both over the lanes.
    int32_t groups_before = groups, members_before = members;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
      const int32_t g = __shfl_up_sync(0xffffffffu, groups_before, offset);
      const int32_t m = __shfl_up_sync(0xffffffffu, members_before, offset);
      if (tid >= offset) {
        groups_before += g;
        members_before += m;
      }
    }
    groups_before -= groups;
    members_before -= members;
    for (int64_t e = first; e < last; ++e) {
      cursor[e] = members_before;
      if (count[e] > 0) {
        out.expert[groups_before] = static_cast<int32_t>(e);
        out.begin[groups_before] = members_before;
        ++groups_before;
        members_before += count[e];
      }
    }
    if (tid == 31) {
      *out.n_groups = groups_before;
      out.begin[groups_before] = members_before;
    }
  }
  __syncthreads();
  for (int64_t p = tid; p < pairs; p += kGroupThreads) {
    const int32_t e = ids[p];
    if (e >= 0 && e < n_experts) out.pairs[atomicAdd(&cursor[e], 1)] = static_cast<int32_t>(p);
  }
}

constexpr int kRowsPerBlock = 4;  // one warp per row, as gemv.cu
constexpr int kThreads = 32 * kRowsPerBlock;
constexpr int kPairsPerPass = kGemvMaxTokens;

// Block (x: rows, y: group, z: matrix).
template <DType F>
__global__ void __launch_bounds__(kThreads)
    gemv_experts_kernel(const __grid_constant__ ExpertGemvArgs a, const Q8Activations x) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int g = static_cast<int>(blockIdx.y);
  if (row >= a.rows || g >= *a.groups.n_groups) return;  // the whole warp
  const int m = static_cast<int>(blockIdx.z);
  const uint8_t* wrow =
      a.weights[m] + static_cast<size_t>(a.groups.expert[g]) * a.expert_bytes + row * static_cast<int64_t>(a.row_bytes);
  const int32_t* pairs = a.groups.pairs;
  float* const y = a.y[m];
  const int32_t end = a.groups.begin[g + 1];
  const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll 1
  for (int32_t p0 = a.groups.begin[g]; p0 < end; p0 += kPairsPerPass) {
    const int nt = min(kPairsPerPass, end - p0);
    // The pass's pairs and their rows of x, in registers (t is unrolled everywhere it indexes).
    int32_t pair[kPairsPerPass], x_row[kPairsPerPass];
#pragma unroll
    for (int t = 0; t < kPairsPerPass; ++t) {
      pair[t] = t < nt ? pairs[p0 + t] : 0;
      x_row[t] = static_cast<int32_t>(pair[t] / a.pairs_per_x_row);
    }
    float acc[kPairsPerPass] = {};
    quantized_row_dot<F, kPairsPerPass>(
        wrow, a.cols, x, [&x_row](int t) { return int64_t{x_row[t]}; }, nt, acc, lane);
#pragma unroll
    for (int t = 0; t < kPairsPerPass; ++t) {
      if (t < nt) {
        const float total = warp_sum(acc[t]);
        if (lane == 0) y[static_cast<int64_t>(pair[t]) * a.y_stride + row] = total;
      }
    }
  }
}

constexpr int kCombineThreads = 256;

// Block (x: a chunk of columns, y: token).
__global__ void __launch_bounds__(kCombineThreads)
    combine_experts_kernel(const __grid_constant__ CombineExpertsArgs a) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kCombineThreads + threadIdx.x;
  const int64_t t = blockIdx.y;
  if (c >= a.cols) return;
  const float* w = a.weights + t * a.k;
  const int32_t* ids = a.ids + t * a.k;
  float acc = 0.0f;
  bool first = true;
  for (int64_t s = 0; s < a.k; ++s) {
    if (ids[s] < 0 || ids[s] >= a.n_experts) continue;  // its row was never written
    const int64_t pair = t * a.k + s;
    const int64_t y_row = a.pair_rows != nullptr ? a.pair_rows[pair] : pair;
    const float product = __fmul_rn(a.y[y_row * a.y_stride + c], w[s]);
    acc = first ? product : __fadd_rn(acc, product);
    first = false;
  }
  if (a.shared != nullptr) {
    const float gate = a.shared_logit != nullptr ? routing::shared_expert_gate(a.shared_logit[t]) : 1.0f;
    const float product = __fmul_rn(a.shared[t * a.shared_stride + c], gate);
    acc = first ? product : __fadd_rn(acc, product);
  }
  a.out[t * a.out_stride + c] = acc;
}

}  // namespace

void launch_group_pairs(const int32_t* ids, int64_t pairs, int64_t n_experts, const ExpertPairGroups& out,
                        cudaStream_t stream) {
  group_pairs_kernel<<<1, kGroupThreads, 0, stream>>>(ids, pairs, n_experts, out);
}

bool launch_gemv_experts(DType type, const ExpertGemvArgs& args, const Q8Activations& x, cudaStream_t stream) {
  if (args.rows == 0 || args.max_groups == 0) return true;
  const dim3 grid(static_cast<unsigned>((args.rows + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>(args.max_groups), static_cast<unsigned>(args.n_matrices));
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
