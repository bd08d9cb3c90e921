#pragma once
// The tensor-core prefill attention's per-lane arithmetic (tensor_core_prefill.cu runs it; the
// CPU test tests/unit/cuda_host/tensor_core_prefill_test.cc runs the same functions for 32
// emulated lanes), in the style of FlashAttention-2:
//
// A task is one sequence's `vectors` query vectors of one KV head (query rows x the heads of its
// GQA group, heads fastest). Each warp owns 16 of them, the M rows of its tensor-core products;
// with dim_split 2, two warps own the same 16 and each computes half of their output dims. The
// block walks the keys in tiles of `keys`, aligned to absolute positions. Per tile, a warp
//   1. multiplies its 16 queries (f16, as the other kernels round them for an f16 K) by the
//      tile's keys: S (16 x keys, f32) in its lanes' C registers (mma_fragments.h);
//   2. scales, caps and masks S (prefill_scores);
//   3. takes each row's max over the tile (the lane's own values, then its quad of 4 lanes,
//      which hold the same two rows), updates the row's running max and rescales the row's
//      output and running sum by exp(old max - new max) (prefill_softmax_step);
//   4. turns S into probabilities exp(s - max) rounded to f16, which are at once the A registers
//      of the product with V (prefill_probabilities: C's layout over two 8-key tiles is A's over
//      16 keys), adds them to the row's running sum and accumulates P x V.
// At the end each row's sum is its quad's sum and the output is divided by it (with an attention
// sink, by the sum with the sink's term: prefill_divisor).
//
// A row's result depends on its own scores only: tiles are aligned to absolute positions, a
// masked key adds exactly nothing, so it does not depend on the other rows of its task or the
// batch (a prefill cut into chunks gives the same rows as whole), though it differs from the
// split-KV kernels' (attention_kernels.h) by the f16 rounding of its probabilities.
#include <cmath>
#include <cstdint>

#include "backend/cuda/hd_math.h"
#include "backend/cuda/kv_codec.h"
#include "backend/cuda/mma_fragments.h"

namespace lumen::backend::cuda {

inline constexpr int kPrefillWarps = 4;
// Sequences with fewer rows in a call (decode, speculation's verification rows) keep the split-KV
// kernels: their result for a row is the decode step's, bit for bit.
inline constexpr int kPrefillMinRows = 16;

// The tile shape for a head dim: keys per tile and how many warps share a row group's output
// dims. Chosen so a lane's scores (keys / 2 floats) and output (head_dim / dim_split / 2 floats)
// fit in registers: 64 + 32 floats at 64 dims, 16 + 64 at 128 and 256.
struct PrefillTile {
  int head_dim = 0;  // 0: no tensor-core kernel for this head dim
  int keys = 0;
  int dim_split = 1;
  LUMEN_HD constexpr int vectors() const { return mma::kM * kPrefillWarps / dim_split; }
  LUMEN_HD constexpr int dims_per_warp() const { return head_dim / dim_split; }
};

LUMEN_HD constexpr PrefillTile prefill_tile(int64_t head_dim) {
  switch (head_dim) {
    case 64: return {64, 64, 1};
    case 80: return {80, 64, 1};  // 64 + 40 floats; SigLIP's heads of 72 padded (vision towers)
    case 128: return {128, 32, 1};
    case 256: return {256, 32, 2};
    default: return {};
  }
}

// One block's work: query vectors [vector_begin, vector_begin + tile.vectors()) of sequence
// `seq` and KV head `kv_head`, vector v being row v / group, head kv_head * group + v % group.
struct PrefillTask {
  int32_t seq = 0;
  int32_t kv_head = 0;
  int32_t vector_begin = 0;
  int32_t unused = 0;
};

// The keys a row sees: [first, last] (its window's first key, its own position).
struct PrefillRow {
  int64_t first = 0;
  int64_t last = -1;
};

LUMEN_HD PrefillRow prefill_row(int64_t position, int64_t window) {
  return {window > 0 && position - window + 1 > 0 ? position - window + 1 : 0, position};
}

// The keys a row of a task sees: a causal row its window up to its own position; a row of an
// encoder's sequence (bidirectional) every key of the sequence, 0 .. seq_tokens - 1.
LUMEN_HD PrefillRow prefill_task_row(bool bidirectional, int64_t seq_tokens, int64_t position, int64_t window) {
  return bidirectional ? PrefillRow{0, seq_tokens - 1} : prefill_row(position, window);
}

// The keys a task reads, from its first row's first key to its last row's last, and whether
// every row of the task sees every key of the tile [t0, t0 + keys): the tile lies inside the
// keys all its rows share, from the last row's first key to the first row's last (windows and
// positions only grow from row to row).
struct PrefillTaskKeys {
  PrefillRow first_row, last_row;
  LUMEN_HD int64_t lo() const { return first_row.first; }
  LUMEN_HD int64_t hi() const { return last_row.last; }
  LUMEN_HD bool all_visible(int64_t t0, int64_t keys) const {
    return t0 >= last_row.first && t0 + keys - 1 <= first_row.last;
  }
};

// The head dim an encoder's heads run at on the tensor cores: the narrowest tile at least as wide
// (their values past head_dim are zeros in the packed keys and values, so the scores and outputs
// are those of head_dim), or 0 when none is.
LUMEN_HD constexpr int64_t prefill_padded_head_dim(int64_t head_dim) {
  return head_dim < 1      ? 0
         : head_dim <= 64  ? 64
         : head_dim <= 80  ? 80
         : head_dim <= 128 ? 128
         : head_dim <= 256 ? 256
                           : 0;
}

// scale, or softcap * tanh(dot * scale / softcap): the split-KV kernels' arithmetic.
struct PrefillScore {
  float scale = 1.0f;
  float softcap = 0.0f;
  float capped_scale = 0.0f;  // scale / softcap, rounded once
};

LUMEN_HD float prefill_score(float dot, const PrefillScore& s) {
  return s.softcap != 0.0f ? hd::mul_rn(s.softcap, hd::tanh_f32(hd::mul_rn(dot, s.capped_scale)))
                           : hd::mul_rn(dot, s.scale);
}

// One lane's registers: its scores (then probabilities) of the tile, C layout, one 16 x 8
// product per 8 keys; its output accumulators, one 16 x 8 product per 8 dims; and the running
// max (its quad's common value) and its own share of the running sum of rows g and g + 8.
template <int KEYS, int DIMS>
struct PrefillLane {
  static constexpr int kScoreTiles = KEYS / mma::kN;
  static constexpr int kOutTiles = DIMS / mma::kN;
  float s[kScoreTiles][4];
  float o[kOutTiles][4];
  float m[2];
  float l[2];
};

template <int KEYS, int DIMS>
LUMEN_HD void prefill_start(PrefillLane<KEYS, DIMS>& st) {
  LUMEN_UNROLL
  for (int j = 0; j < PrefillLane<KEYS, DIMS>::kOutTiles; ++j) {
    LUMEN_UNROLL
    for (int i = 0; i < 4; ++i) st.o[j][i] = 0.0f;
  }
  st.m[0] = st.m[1] = -INFINITY;
  st.l[0] = st.l[1] = 0.0f;
}

// Scores of the tile starting at key `tile_start`: scaled, capped, and -inf where the row does
// not see the key (`all_visible`: every row of the task sees every key of the tile).
template <int KEYS, int DIMS>
LUMEN_HD void prefill_scores(PrefillLane<KEYS, DIMS>& st, int lane, int64_t tile_start, const PrefillRow rows[2],
                             bool all_visible, const PrefillScore& score) {
  LUMEN_UNROLL
  for (int j = 0; j < PrefillLane<KEYS, DIMS>::kScoreTiles; ++j) {
    LUMEN_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int64_t key = tile_start + mma::kN * j + mma::c_coord(lane, i).col;
      const PrefillRow& row = rows[i >> 1];
      const bool visible = all_visible || (key >= row.first && key <= row.last);
      st.s[j][i] = visible ? prefill_score(st.s[j][i], score) : -INFINITY;
    }
  }
}

// The lane's own max of rows g and g + 8 over the tile (then reduced over its quad).
template <int KEYS, int DIMS>
LUMEN_HD void prefill_lane_max(const PrefillLane<KEYS, DIMS>& st, float max[2]) {
  max[0] = max[1] = -INFINITY;
  LUMEN_UNROLL
  for (int j = 0; j < PrefillLane<KEYS, DIMS>::kScoreTiles; ++j) {
    LUMEN_UNROLL
    for (int i = 0; i < 4; ++i) max[i >> 1] = fmaxf(max[i >> 1], st.s[j][i]);
  }
}

// With the rows' tile max (their quad's): the new running max; the output and sum rescaled; the
// scores replaced by their probabilities, rounded to f16 (so the sum adds what P x V
// multiplies). A row that has seen no key yet keeps max -inf and probabilities 0.
template <int KEYS, int DIMS>
LUMEN_HD void prefill_softmax_step(PrefillLane<KEYS, DIMS>& st, const float tile_max[2]) {
  float m_new[2], correction[2];
  LUMEN_UNROLL
  for (int r = 0; r < 2; ++r) {
    m_new[r] = fmaxf(st.m[r], tile_max[r]);
    // exp(-inf - finite) is 0: a row's first visible tile drops its (zero) history.
    correction[r] = m_new[r] == -INFINITY ? 1.0f : hd::exp_f32(hd::sub_rn(st.m[r], m_new[r]));
    st.m[r] = m_new[r];
    st.l[r] = hd::mul_rn(st.l[r], correction[r]);
  }
  LUMEN_UNROLL
  for (int j = 0; j < PrefillLane<KEYS, DIMS>::kOutTiles; ++j) {
    LUMEN_UNROLL
    for (int i = 0; i < 4; ++i) st.o[j][i] = hd::mul_rn(st.o[j][i], correction[i >> 1]);
  }
  LUMEN_UNROLL
  for (int j = 0; j < PrefillLane<KEYS, DIMS>::kScoreTiles; ++j) {
    LUMEN_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int r = i >> 1;
      const float p = m_new[r] == -INFINITY || st.s[j][i] == -INFINITY
                          ? 0.0f
                          : hd::half_to_float(hd::float_to_half(hd::exp_f32(hd::sub_rn(st.s[j][i], m_new[r]))));
      st.s[j][i] = p;
      st.l[r] = hd::add_rn(st.l[r], p);
    }
  }
}

// The A registers of P (16 rows x keys 16 kk .. 16 kk + 15) for the product with V: C's
// registers of score tiles 2 kk and 2 kk + 1, packed as f16 (exact: they were rounded).
template <int KEYS, int DIMS>
LUMEN_HD void prefill_probabilities(const PrefillLane<KEYS, DIMS>& st, int kk, uint32_t a[4]) {
  LUMEN_UNROLL
  for (int half = 0; half < 2; ++half) {
    const float* c = st.s[2 * kk + half];
    a[2 * half] = mma::pack(hd::float_to_half(c[0]), hd::float_to_half(c[1]));
    a[2 * half + 1] = mma::pack(hd::float_to_half(c[2]), hd::float_to_half(c[3]));
  }
}

// Output value i of out tile j once `sum` (the quad's total for that row) is known; 0 for a row
// that saw no key (a padding row).
LUMEN_HD float prefill_output(float acc, float sum) { return sum > 0.0f ? hd::div_rn(acc, sum) : 0.0f; }

// What a row's accumulators are divided by at the end: its quad's sum plus exp(sink - max), its
// head's attention sink's term at the row's running max. Without a sink (sink_logit's -inf) the
// term is 0 and the divisor the sum, bit for bit (a row that saw no key, max -inf too, gets NaN,
// which prefill_output turns into 0 as it did the zero sum). One division and no branch: the
// kernel's registers are at their bound there (a branch on the sinks made it spill), so not
// sink_output_scale's two cases, which only keep exp from overflowing; here a sink some 88 above
// every score of its row overflows it, and that row's output, below 1e-38 of its values, is 0.
LUMEN_HD float prefill_divisor(float max, float sum, float sink) {
  return hd::add_rn(sum, hd::exp_f32(hd::sub_rn(sink, max)));
}

}  // namespace lumen::backend::cuda
