#pragma once
// Internal to the CUDA backend: the kernels of route_experts and moe_ffn_routed
// (cuda_routed_moe.cc), which keep a MoE layer's routing on the device.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/backend_types.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/routed_moe_plan.h"
#include "backend/expert_routing.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda {

// ---- route_experts.cu ----
// The routers of n_tokens tokens, one warp each: backend/expert_routing.h's arithmetic, the
// experts split over the lanes. Writes experts[t * n_used + s], weights[...], and adds 1.0f to
// counts[e] for each choice (counts may be null). At most kMaxDeviceRoutedExperts experts (a
// warp's probabilities in shared memory).
struct RouteExpertsArgs {
  const float* logits = nullptr;
  int64_t logits_stride = 0;    // floats from one token's row to the next
  const float* bias = nullptr;  // selection bias, or null
  RouterConfig config;
  int32_t* experts = nullptr;
  float* weights = nullptr;
  float* counts = nullptr;
  int64_t n_tokens = 0;
};
void launch_route_experts(const RouteExpertsArgs& args, cudaStream_t stream);

// ---- gemv_experts.cu ----
// The routed experts of a batch on the expert GEMV (routed_moe_plan.h says which batches).

// The (token, slot) pairs grouped by the expert they chose, on the device: group g runs expert
// expert[g] for the pairs pairs[begin[g]..begin[g + 1]), g < *n_groups; experts in increasing
// order. A pair whose id is outside [0, n_experts) is in no group. Sized by the host for
// max_groups = min(pairs, n_experts) groups.
struct ExpertPairGroups {
  int32_t* n_groups = nullptr;  // one value
  int32_t* expert = nullptr;    // max_groups
  int32_t* begin = nullptr;     // max_groups + 1
  int32_t* pairs = nullptr;     // pairs
};
// One block: n_experts at most kMaxDeviceRoutedExperts.
void launch_group_pairs(const int32_t* ids, int64_t pairs, int64_t n_experts, const ExpertPairGroups& out,
                        cudaStream_t stream);

// y[m][p * y_stride + r] = row r of matrix m (m < n_matrices: gate and up, or down alone) of the
// expert pair p chose, times x row p / pairs_per_x_row, with gemv.cu's arithmetic: each group's
// expert rows are read once for up to 8 of its pairs. Rows of pairs in no group are not written.
// false: `type` is not a quantized GEMV type (nothing launched).
struct ExpertGemvArgs {
  const uint8_t* weights[2] = {};  // each matrix's expert 0
  float* y[2] = {};
  int n_matrices = 1;
  size_t expert_bytes = 0;  // from one expert's matrix to the next
  size_t row_bytes = 0;
  int64_t rows = 0, cols = 0;
  ExpertPairGroups groups;
  int64_t max_groups = 0;
  int64_t pairs_per_x_row = 1;
  int64_t y_stride = 0;
};
bool launch_gemv_experts(tensor::DType type, const ExpertGemvArgs& args, const Q8Activations& x, cudaStream_t stream);

// ---- gemm_experts.cu ----
// The routed experts of a prompt on the tensor cores (routed_moe_plan.h says which prompts;
// expert_gemm_math.h has the tiles and the arithmetic): y[m][p * y_stride + r] = row r of matrix m
// of the expert pair p chose, dequantized to f16, times the f16 row p / pairs_per_x_row of x16,
// summed in f32 and multiplied by scale_state[2] (launch_convert_activations_f16's inverse
// scale). Rows of pairs in no group are not written. cols must be a multiple of 32 and x16 16-byte
// aligned. false: `type` is not one the GEMM stages (nothing launched).
// The GEMV's arguments (x16 in place of its Q8 blocks), and:
struct ExpertGemmArgs : ExpertGemvArgs {
  // The most pairs one group can have (the prompt's tokens: a token chooses an expert once);
  // sizes the grid, whose blocks loop over any more.
  int64_t max_group_pairs = 0;
  const uint16_t* x16 = nullptr;  // f16 rows, cols values apart
  const float* scale_state = nullptr;
};
bool launch_gemm_experts(tensor::DType type, const ExpertGemmArgs& args, cudaStream_t stream);

// out[t, c] = sum over slots s of weights[t * k + s] * y[(t * k + s) * y_stride + c], each
// product rounded before it is added, in slot order (moe_ffn's combine), then + w * shared[t, c]
// where shared is given (w: routing::shared_expert_gate of shared_logit[t], or 1 without it). A
// slot whose id is outside [0, n_experts) adds nothing. With pair_rows, pair p's row of y is
// pair_rows[p] rather than p (y written expert after expert).
struct CombineExpertsArgs {
  const float* y = nullptr;
  const int32_t* pair_rows = nullptr;
  const int32_t* ids = nullptr;
  int64_t n_experts = 0;
  int64_t y_stride = 0;
  const float* weights = nullptr;
  int64_t k = 0;
  const float* shared = nullptr;
  int64_t shared_stride = 0;
  const float* shared_logit = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t cols = 0, n_tokens = 0;
};
void launch_combine_experts(const CombineExpertsArgs& args, cudaStream_t stream);

// ---- biased_experts.cu ----
// gpt-oss's experts (BackendFeature::BiasedExperts): the rows of an expert GEMV's or GEMM's output
// and the expert each belongs to: row r is ids[r]'s (a routed batch's pairs in pair order), or,
// with ids null, every row is `expert`'s. Expert e's bias row starts at bias + e * bias_stride; a
// row whose expert is outside [0, n_experts) gets no bias.
struct ExpertRows {
  const int32_t* ids = nullptr;
  int32_t expert = 0;
  int64_t n_experts = 0;
  int64_t n_rows = 0;
  int64_t bias_stride = 0;  // floats
};
// gate[r, c] = glu(gate[r, c] + gate_bias, up[r, c] + up_bias) for Swiglu and SwigluOai (either
// bias may be null: none); false (nothing launched) for Geglu. gate and up share `stride`.
bool launch_expert_glu(float* gate, const float* up, int64_t stride, const float* gate_bias, const float* up_bias,
                       const ExpertRows& rows, int64_t cols, Glu glu, cudaStream_t stream);
// y[r, c] += bias of row r's expert (the down projection's, before the router's weight).
void launch_add_expert_bias(float* y, int64_t stride, const float* bias, const ExpertRows& rows, int64_t cols,
                            cudaStream_t stream);

}  // namespace lumen::backend::cuda
