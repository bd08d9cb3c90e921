#pragma once
// The activation quantization of one block, for every kernel that writes it: the standalone
// quantization (activation_quant.cu) and the producers that quantize their own output for the
// matmul after them (norm_quantize.cu). One spelling of the arithmetic, so a fused producer's
// codes, scales and sums are the standalone kernel's bit for bit (backend/cpu/activation_quant.cc
// is the reference both follow: inverse scale 127 / amax, round half to even; Q8_K's signed scale
// from the first element of largest magnitude).
#include <cstdint>

#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

// A 32-value block (Q8_0, or Q8_1 `with_sum`) held one value a lane by a whole warp: block
// `block` of token `token` in `out` (the warp's 32 lanes must all call it).
__device__ __forceinline__ void quantize_q8_32_warp(float v, int lane, int64_t token, int64_t block,
                                                    const Q8Activations& out, bool with_sum) {
  const int64_t blocks = out.cols / 32;
  const float amax = warp_max(fabsf(v));
  const float d = __fdiv_rn(amax, 127.0f);
  const float inverse = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
  const int q = static_cast<int>(rintf(__fmul_rn(v, inverse)));
  out.qs[token * out.cols + block * 32 + lane] = static_cast<int8_t>(q);
  const int sum = warp_sum(q);
  if (lane == 0) {
    out.d[token * blocks + block] = round_to_half(d);
    if (with_sum) out.s[token * blocks + block] = round_to_half(__fmul_rn(d, static_cast<float>(sum)));
  }
}

// The largest magnitude and the first (lowest index) element holding it, with its signed value:
// Q8_K's scale. A value that is 0 or NaN is no candidate (the CPU's scan keeps an element only
// when its magnitude is strictly above the running one, which starts at 0).
struct Q8kLead {
  float amax;
  int index;
  float value;
};

__device__ __forceinline__ Q8kLead q8k_lead_of(float v, int index) {
  const float a = fabsf(v);
  return a > 0.0f ? Q8kLead{a, index, v} : Q8kLead{0.0f, 1 << 30, 0.0f};
}

__device__ __forceinline__ Q8kLead q8k_lead_pick(Q8kLead a, Q8kLead b) {
  return b.amax > a.amax || (b.amax == a.amax && b.index < a.index) ? b : a;
}

__device__ __forceinline__ Q8kLead warp_q8k_lead(Q8kLead lead) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Q8kLead other{__shfl_xor_sync(0xffffffffu, lead.amax, offset),
                        __shfl_xor_sync(0xffffffffu, lead.index, offset),
                        __shfl_xor_sync(0xffffffffu, lead.value, offset)};
    lead = q8k_lead_pick(lead, other);
  }
  return lead;
}

// A 256-value Q8_K super-block held one value a thread by a whole block of 256 threads (thread i
// holds value i): super-block `block` of token `token`. `shared` is 8 Q8kLead of shared memory
// (one per warp); every thread must call it, and it ends with a barrier, so the next call may
// reuse `shared`. The max and the code sums are exact, so the order of their reductions (here a
// tree, in activation_quant.cu's kernel a lane's 8 values then its warp) cannot change them.
inline constexpr int kQ8kThreads = 256;

__device__ __forceinline__ void quantize_q8_k_block(float v, int64_t token, int64_t block, const Q8Activations& out,
                                                    Q8kLead* shared) {
  const int i = static_cast<int>(threadIdx.x);
  const Q8kLead mine = warp_q8k_lead(q8k_lead_of(v, i));
  if (i % 32 == 0) shared[i / 32] = mine;
  __syncthreads();
  Q8kLead lead = shared[0];
  for (int w = 1; w < kQ8kThreads / 32; ++w) lead = q8k_lead_pick(lead, shared[w]);
  __syncthreads();  // shared read by all before anyone reuses it

  int8_t* qs = out.qs + token * out.cols + block * 256;
  int32_t* bsums = out.bsums + token * (out.cols / 16) + block * 16;
  float* d = out.d + token * (out.cols / 256) + block;
  if (lead.amax == 0.0f) {
    qs[i] = 0;
    if (i % 16 == 0) bsums[i / 16] = 0;
    if (i == 0) *d = 0.0f;
    return;
  }
  const float iscale = __fdiv_rn(-127.0f, lead.value);
  const int q = min(127, static_cast<int>(rintf(__fmul_rn(iscale, v))));
  qs[i] = static_cast<int8_t>(q);
  // Values 16g .. 16g + 15: the 16 threads of one half-warp.
  int sum = q;
  for (int offset = 8; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (i % 16 == 0) bsums[i / 16] = sum;
  if (i == 0) *d = __fdiv_rn(1.0f, iscale);
}

}  // namespace lumen::backend::cuda
