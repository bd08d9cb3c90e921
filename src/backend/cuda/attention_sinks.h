#pragma once
// Attention sinks (AttentionConfig::sinks, gpt-oss) in the CUDA kernels' softmax: head h's sink
// logit is a key without a value that joins its rows' max and sum, so the real keys' weights
// sum to 1 - p(sink). The split-KV kernels never see it: their splits are partial sums, and a
// sink counted in each would be counted once per split. It joins once per row where the
// splits are merged (attention_combine.cuh), and where the tensor-core prefill closes a row.
// Host and device alike, so tests/unit/cuda_host checks them against the CPU backend's
// arithmetic (backend/cpu/attention_row_masks.h's online_output_scale, attention_exact.cc).
#include <cmath>
#include <cstdint>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda {

// Head `head`'s sink logit; -inf without sinks, which changes neither the max nor the sum.
LUMEN_HD float sink_logit(const float* sinks, int64_t head) { return sinks != nullptr ? sinks[head] : -INFINITY; }

// One-pass softmax (Flash mode's merge, the tensor-core prefill): the factor a row's accumulator
// (sum of exp(s - max) v over its keys) is multiplied by, from the row's max and sum over its
// keys. Without a sink 1 / sum (0 for a row that saw no key). With one, as the CPU's online path
// and ggml's flash attention close a row: a sink above the max becomes the max (accumulator and
// sum scaled down by exp(max - sink), 0 when no key was seen), else exp(sink - max) joins the
// sum.
LUMEN_HD float sink_output_scale(float max, float sum, float sink) {
  if (sink == -INFINITY) return sum > 0.0f ? hd::div_rn(1.0f, sum) : 0.0f;
  if (sink > max) {
    const float down = hd::exp_f32(hd::sub_rn(max, sink));
    return hd::div_rn(down, hd::add_rn(hd::mul_rn(sum, down), 1.0f));
  }
  return hd::div_rn(1.0f, hd::add_rn(sum, hd::exp_f32(hd::sub_rn(sink, max))));
}

// Exact modes (Stats' merge, which gives ExactPv each row's max and inverse sum): the row's max
// counts the sink, as ggml's soft_max does ...
LUMEN_HD float sink_row_max(float max, float sink) { return sink > max ? sink : max; }

// ... and the sink's exponential joins the row's double sum, taken in f32 and then widened, as
// the CPU's exact path (and ggml) add it. 0 without a sink.
LUMEN_HD double sink_sum_term(float sink, float row_max) {
  return sink == -INFINITY ? 0.0 : static_cast<double>(hd::exp_f32(hd::sub_rn(sink, row_max)));
}

}  // namespace lumen::backend::cuda
