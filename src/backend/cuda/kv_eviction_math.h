#pragma once
// Importance-based KV eviction on the device (kv_eviction.cu): the arithmetic and indexing of
// attention_scores and gather_kv_rows as host-and-device functions, so tests/unit/cuda_host runs
// them on a CPU against the CPU backend (backend/cpu/kv_importance.cc). What stays in the .cu
// file is the thread mapping and the reductions over a row's keys (max, and the sum of
// exponentials in double).
//
// attention_scores: for each scored row r and query head h, the row's scores over its visible
// slots [lo, pos], their max M and inv = 1 / sum exp(s - M) (the sum in double), then each slot's
// probability exp(s - M) * inv, rounded to f16 on an f16 cache as the CPU's attention rounds the
// probabilities it weighs the values with (its scores are those, bit for bit); the probabilities
// of the rows and of the query heads of one KV head are then summed per slot, rows in order.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/hd_math.h"
#include "backend/cuda/kv_codec.h"

namespace lumen::backend::cuda {

// Cache row of slot `slot` of a sequence (block * block_size + slot within the block).
LUMEN_HD int64_t table_row(const int32_t* table, int64_t slot, int64_t block_size) {
  return static_cast<int64_t>(table[slot / block_size]) * block_size + slot % block_size;
}

// ---- gather_kv_rows ----

// One of K or V: item h * n_keep + j is KV head h's j-th kept slot. Its slice (slice_bytes at
// h * slice_bytes of a row: whole blocks per head, kv_slice_bytes) moves from slot keep[item] of
// src_table's blocks to slot j of dst_table's.
struct KvGatherArgs {
  const int32_t* src_table = nullptr;
  const int32_t* dst_table = nullptr;
  const int32_t* keep = nullptr;
  int64_t n_keep = 0;
  int64_t block_size = 0;
  size_t row_bytes = 0;
  size_t slice_bytes = 0;
};

LUMEN_HD size_t kv_gather_source(const KvGatherArgs& a, int64_t item) {
  const int64_t head = item / a.n_keep;
  return static_cast<size_t>(table_row(a.src_table, a.keep[item], a.block_size)) * a.row_bytes +
         static_cast<size_t>(head) * a.slice_bytes;
}

LUMEN_HD size_t kv_gather_dest(const KvGatherArgs& a, int64_t item) {
  const int64_t head = item / a.n_keep, j = item % a.n_keep;
  return static_cast<size_t>(table_row(a.dst_table, j, a.block_size)) * a.row_bytes +
         static_cast<size_t>(head) * a.slice_bytes;
}

// ---- attention_scores ----

struct KvScoreArgs {
  const float* q = nullptr;  // row (token * n_heads + head), q_stride floats apart
  int64_t q_stride = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  const uint8_t* k = nullptr;  // the key cache: f16 or f32 rows of n_kv_heads * head_dim
  size_t k_row_bytes = 0;
  bool k_f16 = true;
  const int32_t* block_table = nullptr;
  int64_t block_size = 0;
  int64_t first_token = 0;  // batch row of the slice's row 0
  int64_t start_pos = 0;    // its position
  int64_t window = 0;       // sliding window (0: none)
  float scale = 1.0f;
  float softcap = 0.0f;
};

// The first slot row r (of the slice) sees: 0, or its window's start.
LUMEN_HD int64_t kv_score_first_slot(const KvScoreArgs& a, int64_t r) {
  const int64_t pos = a.start_pos + r;
  return a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
}

// Query head h of row r as the scores read it: rounded to f16 against an f16 cache (the
// attention's operand type), as is against an f32 one.
LUMEN_HD float kv_score_query(const KvScoreArgs& a, int64_t r, int64_t h, int64_t d) {
  const float x = a.q[((a.first_token + r) * a.n_heads + h) * a.q_stride + d];
  return a.k_f16 ? hd::half_to_float(hd::float_to_half(x)) : x;
}

// The score of query vector `query` (head_dim values, from kv_score_query) against slot `slot`
// of KV head kv_head: the dot product in f32, then the scale and softcap as each cache's CPU path
// applies them (f16: the attention's c * tanh(dot * (scale / c)); f32: c * tanh(dot * scale / c)).
LUMEN_HD float kv_score_key(const KvScoreArgs& a, const float* query, int64_t slot, int64_t kv_head) {
  const uint8_t* row = a.k + static_cast<size_t>(table_row(a.block_table, slot, a.block_size)) * a.k_row_bytes;
  const int64_t first = kv_head * a.head_dim;
  float dot = 0.0f;
  for (int64_t d = 0; d < a.head_dim; ++d) {
    const float key = a.k_f16 ? hd::half_to_float(hd::load_u16(row + 2 * (first + d)))
                              : hd::float_from_bits(hd::load_u32(row + 4 * (first + d)));
    dot = hd::add_rn(dot, hd::mul_rn(query[d], key));
  }
  if (a.softcap == 0.0f) return hd::mul_rn(dot, a.scale);
  const float t = hd::tanh_f32(a.k_f16 ? hd::mul_rn(dot, hd::div_rn(a.scale, a.softcap))
                                       : hd::div_rn(hd::mul_rn(dot, a.scale), a.softcap));
  return hd::mul_rn(a.softcap, t);
}

// A slot's probability from its score, the row's max score and 1 / its sum of exponentials.
LUMEN_HD float kv_score_probability(const KvScoreArgs& a, float score, float max, float inv) {
  const float e = hd::exp_f32(hd::sub_rn(score, max));
  const float p = hd::mul_rn(e, inv);
  return a.k_f16 ? hd::half_to_float(hd::float_to_half(p)) : p;
}

// inv from the sum of exponentials (double): 0 for an empty row.
LUMEN_HD float kv_score_inverse(double sum) { return sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f; }

}  // namespace lumen::backend::cuda
