#include "model/partial_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "util/error.h"

namespace lumen::model {

namespace {

// Query rows per tile and keys per tile: a tile of keys (64 x 256 f32 = 64 KB at Gemma 3's
// widest heads) stays in cache while each of the tile's rows reads it, instead of every row
// streaming the whole block from memory (flash attention's online softmax makes this exact).
constexpr int64_t kRowTile = 16;
constexpr int64_t kKeyTile = 64;
// Independent partial sums, one vector wide: a dot product in lanes needs no reassociation of a
// single running sum (which the compiler may not do without -ffast-math).
constexpr int kLanes = 16;

constexpr float kNoKeys = -std::numeric_limits<float>::infinity();

// The hot loops, compiled for AVX-512, AVX2 and the baseline, picked at load time (ifunc): the
// build targets the baseline, as the CPU backend's own kernels do before their runtime dispatch.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LUMEN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LUMEN_VECTOR_CLONES
#endif

// kLanes floats as one value: GCC's vector extension, which each of attend_tile's clones lowers to
// its own registers (one AVX-512 register, two AVX2 ones, four SSE ones). Loads and stores go
// through memcpy: rows need not be aligned.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
// The helpers that pass Lanes by value are always inlined into the clones: no call passes one
// across the ABI that GCC's -Wpsabi note is about.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

[[gnu::always_inline]] inline Lanes load(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

[[gnu::always_inline]] inline void store(float* p, Lanes v) { std::memcpy(p, &v, sizeof(v)); }

// Rows go through the products four at a time: each key row (and value row) loaded once serves
// four queries, and the four running sums are independent (one would wait a multiply-add's
// latency between steps).
constexpr int kRowBlock = 4;

// The sum of a vector's lanes in four halvings (a shuffle and an add each), where a lane-by-lane
// sum would be fifteen dependent scalar adds.
[[gnu::always_inline]] inline float sum_lanes(Lanes v) {
#if defined(__GNUC__) && !defined(__clang__)
  typedef int LaneIndex __attribute__((vector_size(kLanes * sizeof(int))));
  v += __builtin_shuffle(v, LaneIndex{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
  v += __builtin_shuffle(v, LaneIndex{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11});
  v += __builtin_shuffle(v, LaneIndex{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13});
  v += __builtin_shuffle(v, LaneIndex{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14});
  return v[0];
#else
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += v[l];
  return sum;
#endif
}

// out[i] = q[i] . k over n values, for four query rows. Inlined into each of attend_tile's clones,
// so that it is compiled for the clone's vector width.
[[gnu::always_inline]] inline void dot4(const float* const q[kRowBlock], const float* k, int64_t n, float* out) {
  Lanes s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    const Lanes kv = load(k + d);
    s0 += load(q[0] + d) * kv;
    s1 += load(q[1] + d) * kv;
    s2 += load(q[2] + d) * kv;
    s3 += load(q[3] + d) * kv;
  }
  out[0] = sum_lanes(s0), out[1] = sum_lanes(s1), out[2] = sum_lanes(s2), out[3] = sum_lanes(s3);
  for (; d < n; ++d) {
    for (int i = 0; i < kRowBlock; ++i) out[i] += q[i][d] * k[d];
  }
}

// acc_i[0, n) += sum over keys j of p_i[j] * v_j (v_j = values + j * stride) for four rows i:
// kLanes values of each row's acc held in registers across all the keys (adding each key's row
// into acc in memory would make every key a load and a store of the whole row).
[[gnu::always_inline]] inline void add_weighted_rows4(float* const acc[kRowBlock], const float* const p[kRowBlock],
                                                      int64_t keys, const float* values, int64_t stride, int64_t n) {
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    Lanes s0 = load(acc[0] + d), s1 = load(acc[1] + d), s2 = load(acc[2] + d), s3 = load(acc[3] + d);
    for (int64_t j = 0; j < keys; ++j) {
      const Lanes v = load(values + j * stride + d);
      s0 += p[0][j] * v;
      s1 += p[1][j] * v;
      s2 += p[2][j] * v;
      s3 += p[3][j] * v;
    }
    store(acc[0] + d, s0), store(acc[1] + d, s1), store(acc[2] + d, s2), store(acc[3] + d, s3);
  }
  for (; d < n; ++d) {
    for (int i = 0; i < kRowBlock; ++i) {
      for (int64_t j = 0; j < keys; ++j) acc[i][d] += p[i][j] * values[j * stride + d];
    }
  }
}

struct Geometry {
  int64_t heads, kv_heads, head_dim, value_dim, group;
};

// One tile of rows [row0, row0 + rows) and one query head over the keys each row sees, with the
// online softmax's running max `m`, sum `l` and unnormalized output `acc` per row: per tile of
// keys, the scores of every row, then each row's softmax update (masked keys weigh 0), then the
// weighted values.
LUMEN_VECTOR_CLONES
void attend_tile(const Geometry& g, const AttentionRows& queries, const AttentionRows& keys,
                 std::span<const float> values, const backend::AttentionConfig& config, int64_t row0, int64_t rows,
                 int64_t head, std::span<float> out, std::span<float> lse) {
  static_assert(kRowTile % kRowBlock == 0);
  const auto& kpos = keys.positions;
  // Rows past `rows` (a short last tile) see no key: their weights stay 0, their query is row 0's.
  int64_t row_lo[kRowTile], row_hi[kRowTile];
  float m[kRowTile], l[kRowTile];
  const float* q[kRowTile];
  float* a[kRowTile];
  std::vector<float> acc(static_cast<size_t>(kRowTile * g.value_dim), 0.0f);
  int64_t lo = static_cast<int64_t>(kpos.size()), hi = 0;
  for (int64_t r = 0; r < kRowTile; ++r) {
    m[r] = kNoKeys;
    l[r] = 0.0f;
    a[r] = acc.data() + r * g.value_dim;
    q[r] = queries.data.data() + ((row0 + (r < rows ? r : 0)) * g.heads + head) * g.head_dim;
    row_lo[r] = row_hi[r] = 0;
    if (r >= rows) continue;
    const int32_t p = queries.positions[static_cast<size_t>(row0 + r)];
    row_hi[r] = std::upper_bound(kpos.begin(), kpos.end(), p) - kpos.begin();
    row_lo[r] = config.sliding_window > 0
                    ? std::lower_bound(kpos.begin(), kpos.end(), p - config.sliding_window + 1) - kpos.begin()
                    : 0;
    lo = std::min(lo, row_lo[r]);
    hi = std::max(hi, row_hi[r]);
  }
  const int64_t kv_head = head / g.group;
  const int64_t k_stride = g.kv_heads * g.head_dim, v_stride = g.kv_heads * g.value_dim;
  const float* k0 = keys.data.data() + kv_head * g.head_dim;
  const float* v0 = values.data() + kv_head * g.value_dim;
  const bool capped = config.softcap != 0.0f;
  float probs[kRowTile][kKeyTile];
  for (int64_t j0 = lo; j0 < hi; j0 += kKeyTile) {
    const int64_t j1 = std::min(hi, j0 + kKeyTile);
    int64_t begin[kRowTile], end[kRowTile];
    for (int64_t r = 0; r < kRowTile; ++r) {
      begin[r] = std::max(j0, row_lo[r]);
      end[r] = std::max(begin[r], std::min(j1, row_hi[r]));
    }
    for (int64_t r0 = 0; r0 < kRowTile; r0 += kRowBlock) {
      int64_t b = j1, e = j0;  // the keys any of the block's rows sees
      for (int64_t r = r0; r < r0 + kRowBlock; ++r) {
        if (begin[r] < end[r]) b = std::min(b, begin[r]), e = std::max(e, end[r]);
      }
      for (int64_t j = b; j < e; ++j) {
        float s[kRowBlock];
        dot4(q + r0, k0 + j * k_stride, g.head_dim, s);
        for (int i = 0; i < kRowBlock; ++i) probs[r0 + i][j - j0] = s[i];
      }
    }
    for (int64_t r = 0; r < kRowTile; ++r) {
      float* p = probs[r];
      if (begin[r] >= end[r]) {
        std::fill(p, p + (j1 - j0), 0.0f);
        continue;
      }
      float tile_max = kNoKeys;
      for (int64_t j = begin[r] - j0; j < end[r] - j0; ++j) {
        float score = p[j] * config.scale;
        if (capped) score = config.softcap * std::tanh(score / config.softcap);
        p[j] = score;
        tile_max = std::max(tile_max, score);
      }
      const float m_new = std::max(m[r], tile_max);
      if (m[r] != m_new && m[r] != kNoKeys) {
        const float c = std::exp(m[r] - m_new);
        l[r] *= c;
        for (int64_t d = 0; d < g.value_dim; ++d) a[r][d] *= c;
      }
      m[r] = m_new;
      std::fill(p, p + (begin[r] - j0), 0.0f);
      for (int64_t j = begin[r] - j0; j < end[r] - j0; ++j) {
        p[j] = std::exp(p[j] - m_new);
        l[r] += p[j];
      }
      std::fill(p + (end[r] - j0), p + (j1 - j0), 0.0f);
    }
    for (int64_t r0 = 0; r0 < kRowTile; r0 += kRowBlock) {
      int64_t b = j1, e = j0;
      for (int64_t r = r0; r < r0 + kRowBlock; ++r) {
        if (begin[r] < end[r]) b = std::min(b, begin[r]), e = std::max(e, end[r]);
      }
      if (b >= e) continue;
      const float* p[kRowBlock];
      for (int i = 0; i < kRowBlock; ++i) p[i] = probs[r0 + i] + (b - j0);
      add_weighted_rows4(a + r0, p, e - b, v0 + b * v_stride, v_stride, g.value_dim);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = (row0 + r) * g.heads + head;
    float* o = out.data() + at * g.value_dim;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int64_t d = 0; d < g.value_dim; ++d) o[d] = a[r][d] * inv;
    lse[static_cast<size_t>(at)] = l[r] > 0.0f ? m[r] + std::log(l[r]) : kNoKeys;
  }
}

}  // namespace

void partial_attention(const AttentionRows& queries, const AttentionRows& keys, std::span<const float> values,
                       const backend::AttentionConfig& config, std::span<float> out, std::span<float> lse) {
  const Geometry g{config.n_heads, config.n_kv_heads, config.head_dim, backend::attention_value_dim(config),
                   config.n_kv_heads > 0 ? config.n_heads / config.n_kv_heads : 0};
  if (g.heads <= 0 || g.kv_heads <= 0 || g.head_dim <= 0 || g.heads % g.kv_heads != 0) {
    fail("partial attention: {} query heads over {} KV heads of {} values", g.heads, g.kv_heads, g.head_dim);
  }
  const auto n_rows = static_cast<int64_t>(queries.positions.size());
  const auto n_keys = static_cast<int64_t>(keys.positions.size());
  if (static_cast<int64_t>(queries.data.size()) != n_rows * g.heads * g.head_dim ||
      static_cast<int64_t>(keys.data.size()) != n_keys * g.kv_heads * g.head_dim ||
      static_cast<int64_t>(values.size()) != n_keys * g.kv_heads * g.value_dim ||
      static_cast<int64_t>(out.size()) != n_rows * g.heads * g.value_dim ||
      static_cast<int64_t>(lse.size()) != n_rows * g.heads) {
    fail("partial attention: buffers do not match {} rows and {} keys", n_rows, n_keys);
  }
  if (!std::is_sorted(queries.positions.begin(), queries.positions.end()) ||
      !std::is_sorted(keys.positions.begin(), keys.positions.end())) {
    fail("partial attention: positions must ascend");
  }
  for (int64_t row0 = 0; row0 < n_rows; row0 += kRowTile) {
    const int64_t rows = std::min(kRowTile, n_rows - row0);
    for (int64_t head = 0; head < g.heads; ++head)
      attend_tile(g, queries, keys, values, config, row0, rows, head, out, lse);
  }
}

void merge_partial_attention(std::span<float> out, std::span<float> lse, std::span<const float> part_out,
                             std::span<const float> part_lse, int64_t value_dim) {
  if (out.size() != part_out.size() || lse.size() != part_lse.size() ||
      out.size() != lse.size() * static_cast<size_t>(value_dim)) {
    fail("merging partial attention: {} and {} outputs, {} and {} sums", out.size(), part_out.size(), lse.size(),
         part_lse.size());
  }
  for (size_t i = 0; i < lse.size(); ++i) {
    const float a = lse[i], b = part_lse[i];
    if (b == kNoKeys) continue;
    float* o = out.data() + i * static_cast<size_t>(value_dim);
    const float* p = part_out.data() + i * static_cast<size_t>(value_dim);
    if (a == kNoKeys) {
      std::copy_n(p, value_dim, o);
      lse[i] = b;
      continue;
    }
    // Weights relative to the larger sum: neither exp overflows.
    const float top = std::max(a, b);
    const float wa = std::exp(a - top), wb = std::exp(b - top);
    const float inv = 1.0f / (wa + wb);
    for (int64_t d = 0; d < value_dim; ++d) o[d] = (wa * o[d] + wb * p[d]) * inv;
    lse[i] = top + std::log(wa + wb);
  }
}

}  // namespace lumen::model
