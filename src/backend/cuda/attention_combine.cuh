#pragma once
// Internal to attention.cu: merging an attention item's partial results over its splits (the
// combine launch's body), and the fused combine that lets the split-KV launch's last block of an
// item do it (CudaBackendOptions::fused_attention_combine). Included inside attention.cu's
// anonymous namespace, after its kernels' shared helpers.

// A split's partial results, read plainly or (kThroughL2) past this SM's L1: the fused combine
// reads what other SMs' blocks of the same launch wrote (combine_if_last).
template <bool kThroughL2>
__device__ __forceinline__ PartialStats load_stats(const PartialStats* at) {
  if constexpr (kThroughL2) {
    PartialStats st;
    st.sum = __ldcg(&at->sum);
    st.max = __ldcg(&at->max);
    st.seen = __ldcg(&at->seen);
    return st;
  } else {
    return *at;
  }
}
template <bool kThroughL2>
__device__ __forceinline__ float load_acc(const float* at) {
  if constexpr (kThroughL2) {
    return __ldcg(at);
  } else {
    return *at;
  }
}

// Merges an item's partial results over its splits into the output (Flash, ExactPv) or the
// vectors' stats (Stats), with a block's kThreads threads: the combine kernel's body, and the
// fused combine's (the same loop, so the same bits).
template <AttentionMode MODE, bool kThroughL2>
__device__ void combine_item(const AttentionParams& p, const AttentionItem& item) {
  const AttentionSeq seq = p.seqs[item.seq];
  const int64_t n_vec = item.n_q * item.n_heads;
  const int64_t dim = p.value_dim;  // of the partial results and the output
  const auto slot = [&](int64_t s, int64_t v) { return item.partial_base + s * n_vec + v; };

  // Vector v's head's sink (attention_sinks.h): it joins the merged max and sum here, once per
  // vector, never in a split's partial results.
  const auto sink_of = [&](int64_t v) { return sink_logit(p.sinks, item.head_begin + v % item.n_heads); };

  if constexpr (MODE == AttentionMode::Stats) {
    // Each vector's row max M and 1 / (sum of exp(score - M)) over all its splits and its sink.
    for (int64_t v = threadIdx.x; v < n_vec; v += blockDim.x) {
      float max = -INFINITY;
      for (int64_t s = 0; s < item.n_splits; ++s) {
        const PartialStats st = load_stats<kThroughL2>(&p.partial_stats[slot(s, v)]);
        if (st.seen != 0.0f) max = fmaxf(max, st.max);
      }
      const float sink = sink_of(v);
      max = sink_row_max(max, sink);
      double sum = 0.0;
      for (int64_t s = 0; s < item.n_splits; ++s) {
        const PartialStats st = load_stats<kThroughL2>(&p.partial_stats[slot(s, v)]);
        if (st.seen != 0.0f) sum += st.sum * exp(static_cast<double>(st.max) - static_cast<double>(max));
      }
      sum += sink_sum_term(sink, max);
      p.vector_stats[item.stats_base + v] = make_float2(max, sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f);
    }
    return;
  } else {
    for (int64_t i = threadIdx.x; i < n_vec * dim; i += blockDim.x) {
      const int64_t v = i / dim, d = i % dim;
      float result = 0.0f;
      if constexpr (MODE == AttentionMode::Flash) {
        float max = -INFINITY;
        for (int64_t s = 0; s < item.n_splits; ++s) {
          const PartialStats st = load_stats<kThroughL2>(&p.partial_stats[slot(s, v)]);
          if (st.seen != 0.0f) max = fmaxf(max, st.max);
        }
        float sum = 0.0f, acc = 0.0f;
        for (int64_t s = 0; s < item.n_splits; ++s) {
          const PartialStats st = load_stats<kThroughL2>(&p.partial_stats[slot(s, v)]);
          if (st.seen == 0.0f) continue;
          const float weight = expf(__fsub_rn(st.max, max));  // 1 for the split holding the max
          sum = __fadd_rn(sum, __fmul_rn(static_cast<float>(st.sum), weight));
          acc = __fadd_rn(acc, __fmul_rn(load_acc<kThroughL2>(&p.partial_acc[slot(s, v) * dim + d]), weight));
        }
        // acc / sum without a sink; with one, the sink closes the row (attention_sinks.h).
        result = __fmul_rn(acc, sink_output_scale(max, sum, sink_of(v)));
      } else {  // ExactPv: the probabilities were normalised already
        for (int64_t s = 0; s < item.n_splits; ++s) {
          if (load_stats<kThroughL2>(&p.partial_stats[slot(s, v)]).seen != 0.0f)
            result = __fadd_rn(result, load_acc<kThroughL2>(&p.partial_acc[slot(s, v) * dim + d]));
        }
      }
      const int64_t token = seq.first_token + item.q_begin + v / item.n_heads;
      const int64_t head = item.head_begin + v % item.n_heads;
      p.out[(token * p.n_heads + head) * p.out_stride + d] = result;
      // A warp's 32 lanes hold one aligned 32-value block of the token's row (dim is a multiple
      // of 32, so are n_vec * dim and the block's stride), and every lane of the warp takes this
      // iteration: the block's codes and scale in place of the GEMV's own quantization.
      if (p.out_act != tensor::DType::F32) {
        quantize_q8_32_warp(result, static_cast<int>(threadIdx.x % 32), token, (head * dim + d) / 32, p.out_q,
                            p.out_act == tensor::DType::Q8_1);
      }
    }
  }
}

// The fused combine (AttentionParams::combine_counters: decode launches in Flash mode): the block
// that writes an item's last partial results merges them, where a combine launch would. Each
// block makes its writes visible device-wide before it counts itself; the block that counts last
// reads the others' through L2, and sets the count back to 0 for the item's next launch (a
// replayed graph's included). Which block comes last changes from launch to launch, the result
// does not: the merge runs over the splits in order, whichever block runs it.
__device__ __forceinline__ void combine_if_last(const AttentionParams& p, const AttentionItem& item, int64_t index) {
  bool last = false;
  __syncthreads();  // every warp's partial results written
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned before = atomicAdd(&p.combine_counters[index], 1u);
    last = static_cast<int64_t>(before) + 1 == item.n_splits;
    if (last) p.combine_counters[index] = 0;
  }
  if (__syncthreads_or(last) == 0) return;
  __threadfence();
  combine_item<AttentionMode::Flash, true>(p, item);
}
