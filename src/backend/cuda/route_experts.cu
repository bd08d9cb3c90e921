// The MoE router on the device (Backend::route_experts): one warp per token. Lane i takes the
// experts i, i + 32, ...; the softmax's max and (double) sum are warp reductions; each of the
// n_used picks is every lane's best candidate after the last pick, reduced over the warp with
// `routing::earlier`. Those orders are total, so the experts chosen are the host's
// (common::route_token) for the same probabilities; a probability can differ from the host's in
// its last bit only where expf or the double sum's order rounds differently. gpt-oss's gating
// (ExpertGating::SoftmaxWeight) chooses by logit and takes a softmax over the chosen ones only,
// in lane 0 in slot order, as the host does.
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/routed_moe_kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ routing::Pick warp_earliest(routing::Pick p) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const routing::Pick other{__shfl_xor_sync(0xffffffffu, p.value, offset),
                              __shfl_xor_sync(0xffffffffu, p.index, offset)};
    p = routing::earlier(p, other);
  }
  return p;
}

__device__ __forceinline__ float warp_max_of(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__global__ void __launch_bounds__(kThreads) route_experts_kernel(const __grid_constant__ RouteExpertsArgs a) {
  extern __shared__ float shared[];  // kWarps rows of n_experts probabilities, then kWarps x 64 group scores
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (t >= a.n_tokens) return;  // the whole warp
  const RouterConfig& c = a.config;
  const int64_t n_experts = c.n_experts, k = c.n_used;
  float* probs = shared + warp * n_experts;
  float* scores = shared + kWarps * n_experts + warp * kMaxExpertGroups;
  const float* row = a.logits + t * a.logits_stride;

  if (c.gating == ExpertGating::Softmax) {
    float max = -INFINITY;
    for (int64_t e = lane; e < n_experts; e += 32) max = fmaxf(max, row[e]);
    max = warp_max_of(max);
    double sum = 0.0;
    for (int64_t e = lane; e < n_experts; e += 32) {
      probs[e] = routing::softmax_exp(row[e], max);
      sum += static_cast<double>(probs[e]);
    }
    const float scale = routing::softmax_scale(warp_sum(sum));
    for (int64_t e = lane; e < n_experts; e += 32) probs[e] = __fmul_rn(probs[e], scale);
  } else if (c.gating == ExpertGating::Sigmoid) {
    for (int64_t e = lane; e < n_experts; e += 32) probs[e] = routing::sigmoid(row[e]);
  } else {  // SoftmaxWeight (gpt-oss): chosen by logit, weighted below
    for (int64_t e = lane; e < n_experts; e += 32) probs[e] = row[e];
  }
  __syncwarp();

  uint64_t kept = ~uint64_t{0};
  int64_t per_group = 0;
  if (c.n_groups > 1) {
    const int64_t size = n_experts / c.n_groups;
    for (int64_t g = lane; g < c.n_groups; g += 32) {
      routing::TopTwo top;
      for (int64_t e = g * size; e < (g + 1) * size; ++e) {
        routing::add_to_top_two(top, routing::chooser_value(probs, a.bias, kept, 0, e));
      }
      scores[g] = routing::group_score(top);
    }
    __syncwarp();
    kept = routing::kept_groups(scores, c.n_groups, c.n_groups_used);
    per_group = size;
  }

  int32_t* experts = a.experts + t * k;
  float* weights = a.weights + t * k;
  routing::Pick last = routing::no_pick();
  for (int64_t s = 0; s < k; ++s) {
    routing::Pick best = routing::no_pick();
    for (int64_t e = lane; e < n_experts; e += 32) {
      const float v = routing::chooser_value(probs, a.bias, kept, per_group, e);
      if (routing::after(v, static_cast<int32_t>(e), last)) best = routing::earlier(best, {v, static_cast<int32_t>(e)});
    }
    best = warp_earliest(best);
    if (lane == 0) {
      experts[s] = best.index;
      weights[s] = probs[best.index];
    }
    last = best;
  }
  if (lane != 0) return;
  if (c.gating == ExpertGating::SoftmaxWeight) routing::softmax_over_chosen(weights, k);
  if (c.normalize) {
    double sum = 0.0;
    for (int64_t s = 0; s < k; ++s) sum += static_cast<double>(weights[s]);
    const float total = routing::normalizer(sum);
    for (int64_t s = 0; s < k; ++s) weights[s] = __fdiv_rn(weights[s], total);
  }
  if (c.scale != 0.0f && c.scale != 1.0f) {
    for (int64_t s = 0; s < k; ++s) weights[s] = __fmul_rn(weights[s], c.scale);
  }
  if (a.counts != nullptr) {
    for (int64_t s = 0; s < k; ++s) atomicAdd(a.counts + experts[s], 1.0f);
  }
}

}  // namespace

void launch_route_experts(const RouteExpertsArgs& args, cudaStream_t stream) {
  if (args.n_tokens == 0) return;
  const auto blocks = static_cast<unsigned>((args.n_tokens + kWarps - 1) / kWarps);
  const size_t bytes = sizeof(float) * static_cast<size_t>(kWarps * (args.config.n_experts + kMaxExpertGroups));
  route_experts_kernel<<<blocks, kThreads, bytes, stream>>>(args);
}

}  // namespace lumen::backend::cuda
