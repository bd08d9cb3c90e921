// gpt-oss's experts on the device (BackendFeature::BiasedExperts): each expert's gate and up
// products gain that expert's bias rows before the GLU, and its down product its down bias
// before the router's weight, as the CPU's moe_ffn adds them (backend/cpu/moe_ffn.cc: f32 adds,
// then the GLU). The rows are a routed batch's (token, slot) pairs in pair order, each the expert
// its id names (moe_ffn_routed), or one expert's rows (the composed moe_ffn and the host-grouped
// way). A pair whose id is outside the experts gets no bias: its rows were never computed, and
// the combine skips it.
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/routed_moe_kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 256;

// The bias row of row r's expert, or null.
__device__ __forceinline__ const float* bias_row(const ExpertRows& rows, const float* bias, int64_t r) {
  if (bias == nullptr) return nullptr;
  const int64_t e = rows.ids != nullptr ? rows.ids[r] : rows.expert;
  if (e < 0 || e >= rows.n_experts) return nullptr;
  return bias + e * rows.bias_stride;
}

__global__ void expert_glu_kernel(float* gate, const float* up, int64_t stride, const float* gate_bias,
                                  const float* up_bias, ExpertRows rows, int64_t cols, bool clamped) {
  const int64_t total = rows.n_rows * cols, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / cols, c = i % cols;
    float g = gate[r * stride + c], u = up[r * stride + c];
    const float* gb = bias_row(rows, gate_bias, r);
    const float* ub = bias_row(rows, up_bias, r);
    if (gb != nullptr) g = __fadd_rn(g, gb[c]);
    if (ub != nullptr) u = __fadd_rn(u, ub[c]);
    gate[r * stride + c] = clamped ? swiglu_oai_value(g, u) : swiglu_value(g, u);
  }
}

__global__ void add_expert_bias_kernel(float* y, int64_t stride, const float* bias, ExpertRows rows, int64_t cols) {
  const int64_t total = rows.n_rows * cols, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / cols, c = i % cols;
    const float* b = bias_row(rows, bias, r);
    if (b != nullptr) y[r * stride + c] = __fadd_rn(y[r * stride + c], b[c]);
  }
}

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);  // grid-stride past that
}

}  // namespace

bool launch_expert_glu(float* gate, const float* up, int64_t stride, const float* gate_bias, const float* up_bias,
                       const ExpertRows& rows, int64_t cols, Glu glu, cudaStream_t stream) {
  if (glu == Glu::Geglu) return false;
  if (rows.n_rows * cols == 0) return true;
  expert_glu_kernel<<<blocks_for(rows.n_rows * cols), kThreads, 0, stream>>>(gate, up, stride, gate_bias, up_bias, rows,
                                                                             cols, glu == Glu::SwigluOai);
  return true;
}

void launch_add_expert_bias(float* y, int64_t stride, const float* bias, const ExpertRows& rows, int64_t cols,
                            cudaStream_t stream) {
  if (rows.n_rows * cols == 0 || bias == nullptr) return;
  add_expert_bias_kernel<<<blocks_for(rows.n_rows * cols), kThreads, 0, stream>>>(y, stride, bias, rows, cols);
}

}  // namespace lumen::backend::cuda
