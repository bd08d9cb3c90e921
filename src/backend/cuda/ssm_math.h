#pragma once
// Mamba 2's convolution and selective scan as the CUDA kernels compute them (ssm.cu), written as
// host-and-device functions so tests/unit/cuda_host runs the very same arithmetic and indexing on
// a CPU, against the CPU backend, without a GPU. Only the thread mapping stays in ssm.cu:
//  - ssm_conv: one thread per (sequence, channel) runs ssm_conv_channel.
//  - ssm_scan: kSsmLanes threads per (sequence, channel); lane l holds the state values s = l,
//    l + 8, l + 16, ... in registers for the whole sequence, and per token adds its products into
//    one partial sum; the channel's lane 0 gathers the 8 partials and adds them in lane order
//    (ssm_combine). That is the CPU's token scan (backend/cpu/ssm_scan_kernel.h: 8 partial sums
//    over the same state values, then added in order), so the two agree bit for bit wherever
//    exp and log do (the host test compares them).
// Every operation rounds once (hd::mul_rn / add_rn: no FMA contraction on the device).
#include <cmath>
#include <cstdint>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda {

// One sequence of the batch as the kernels read it (uploaded per op): its rows and its state.
struct SsmSeqDesc {
  int64_t first_token = 0;
  int64_t n_tokens = 0;
  float* window = nullptr;  // conv: kernel - 1 rows of `channels` values, oldest first
  float* state = nullptr;   // scan: inner rows of state_size values
};

struct SsmConvArgs {
  const float* x = nullptr;  // rows of `channels` values, x_stride floats apart
  int64_t x_stride = 0;
  const float* weight = nullptr;  // per channel, its `kernel` taps oldest first
  int64_t kernel = 0;
  const float* bias = nullptr;
  int64_t channels = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

struct SsmScanArgs {
  const float* x = nullptr;  // inner width per row
  int64_t x_stride = 0;
  const float* dt = nullptr;  // one value per head per row
  int64_t dt_stride = 0;
  const float* b = nullptr;  // state_size values per group per row
  int64_t b_stride = 0;
  const float* c = nullptr;
  int64_t c_stride = 0;
  int64_t inner = 0;
  int64_t head_dim = 0;
  int64_t state_size = 0;
  int64_t heads_per_group = 0;
  const float* a = nullptr;  // per head
  const float* d = nullptr;
  const float* dt_bias = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// Threads per channel in the scan, and the most state values one of them holds: states of up
// to kSsmLanes * kSsmMaxPerLane (256) values; Mamba 2's are 128.
inline constexpr int kSsmLanes = 8;
inline constexpr int kSsmMaxPerLane = 32;
inline constexpr int64_t kSsmMaxState = int64_t{kSsmLanes} * kSsmMaxPerLane;

namespace hd {

// SiLU as the CPU backend's portable row computes it: v / (1 + exp(-v)).
LUMEN_HD float silu(float v) { return div_rn(v, add_rn(1.0f, exp_f32(-v))); }

// dt' = softplus(dt + bias) as ggml computes it: log(1 + exp(v)) in f32, or v itself above 20.
LUMEN_HD float ssm_softplus(float v) { return v > 20.0f ? v : log_f32(add_rn(1.0f, exp_f32(v))); }

}  // namespace hd

// Channel c of sequence s: every row's output (the taps summed oldest first from 0, then the
// bias, then SiLU), then the channel's column of the window advanced past the rows. Reads and
// writes nothing of any other channel, so channels run in parallel.
LUMEN_HD void ssm_conv_channel(const SsmConvArgs& a, const SsmSeqDesc& s, int64_t c) {
  const int64_t k = a.kernel, history = k - 1;
  const float* w = a.weight + c * k;
  // Input i of the concatenation [window, rows], i in -(k - 1) .. n - 1.
  auto input = [&](int64_t i) -> float {
    return i >= 0 ? a.x[(s.first_token + i) * a.x_stride + c] : s.window[(history + i) * a.channels + c];
  };
  for (int64_t t = 0; t < s.n_tokens; ++t) {
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) sum = hd::add_rn(sum, hd::mul_rn(w[j], input(t - history + j)));
    a.out[(s.first_token + t) * a.out_stride + c] = hd::silu(hd::add_rn(sum, a.bias[c]));
  }
  // The window keeps the last k - 1 inputs; ascending j reads only entries not yet overwritten.
  for (int64_t j = 0; j < history; ++j) s.window[j * a.channels + c] = input(s.n_tokens - history + j);
}

// The scan's per-token values shared by a head's channels: dt' and the state's decay exp(dt' A).
struct SsmTokenStep {
  float dt = 0.0f;
  float decay = 0.0f;
};

LUMEN_HD SsmTokenStep ssm_token_step(const SsmScanArgs& a, const SsmSeqDesc& s, int64_t t, int64_t head) {
  const float dt = hd::ssm_softplus(hd::add_rn(a.dt[(s.first_token + t) * a.dt_stride + head], a.dt_bias[head]));
  return {dt, hd::exp_f32(hd::mul_rn(dt, a.a[head]))};
}

// Lane `lane`'s state values of channel i (s = lane + kSsmLanes * m), to and from its registers.
LUMEN_HD void ssm_load_lane(const SsmScanArgs& a, const SsmSeqDesc& s, int64_t i, int lane,
                            float (&h)[kSsmMaxPerLane]) {
  const float* row = s.state + i * a.state_size;
  LUMEN_UNROLL
  for (int m = 0; m < kSsmMaxPerLane; ++m) {
    const int64_t at = lane + int64_t{kSsmLanes} * m;
    h[m] = at < a.state_size ? row[at] : 0.0f;
  }
}

LUMEN_HD void ssm_store_lane(const SsmScanArgs& a, const SsmSeqDesc& s, int64_t i, int lane,
                             const float (&h)[kSsmMaxPerLane]) {
  float* row = s.state + i * a.state_size;
  LUMEN_UNROLL
  for (int m = 0; m < kSsmMaxPerLane; ++m) {
    const int64_t at = lane + int64_t{kSsmLanes} * m;
    if (at < a.state_size) row[at] = h[m];
  }
}

// Token t for lane `lane` of channel i: its state values decay and take in B x dt'; returns the
// lane's partial sum of state x C, its values added in ascending order from 0.
LUMEN_HD float ssm_scan_lane(const SsmScanArgs& a, const SsmSeqDesc& s, int64_t t, int64_t i, int lane,
                             const SsmTokenStep& step, float (&h)[kSsmMaxPerLane]) {
  const int64_t row = s.first_token + t, group = (i / a.head_dim) / a.heads_per_group;
  const float* b = a.b + row * a.b_stride + group * a.state_size;
  const float* c = a.c + row * a.c_stride + group * a.state_size;
  const float x_dt = hd::mul_rn(a.x[row * a.x_stride + i], step.dt);
  float partial = 0.0f;
  LUMEN_UNROLL
  for (int m = 0; m < kSsmMaxPerLane; ++m) {
    const int64_t at = lane + int64_t{kSsmLanes} * m;
    if (at < a.state_size) {
      h[m] = hd::add_rn(hd::mul_rn(h[m], step.decay), hd::mul_rn(b[at], x_dt));
      partial = hd::add_rn(partial, hd::mul_rn(h[m], c[at]));
    }
  }
  return partial;
}

// Channel i's output for token t from its lanes' partial sums: added in lane order from 0, then
// the skip x D.
LUMEN_HD float ssm_combine(const SsmScanArgs& a, const SsmSeqDesc& s, int64_t t, int64_t i,
                           const float (&partials)[kSsmLanes]) {
  float sum = 0.0f;
  LUMEN_UNROLL
  for (int l = 0; l < kSsmLanes; ++l) sum = hd::add_rn(sum, partials[l]);
  const int64_t row = s.first_token + t;
  return hd::add_rn(sum, hd::mul_rn(a.x[row * a.x_stride + i], a.d[i / a.head_dim]));
}

}  // namespace lumen::backend::cuda
