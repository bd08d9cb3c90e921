#include "model/partial_attention.h"

#include <algorithm>
#include <cmath>
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
// Independent partial sums: a fixed-width inner loop the compiler turns into vector adds
// without reassociating a single running sum (which it may not do without -ffast-math).
constexpr int kLanes = 16;

constexpr float kNoKeys = -std::numeric_limits<float>::infinity();

// The hot loops, compiled for AVX-512, AVX2 and the baseline, picked at load time (ifunc): the
// build targets the baseline, as the CPU backend's own kernels do before their runtime dispatch.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LUMEN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LUMEN_VECTOR_CLONES
#endif

float dot(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += a[d + l] * b[d + l];
  }
  float sum = 0.0f;
  for (; d < n; ++d) sum += a[d] * b[d];
  for (float lane : lanes) sum += lane;
  return sum;
}

struct Geometry {
  int64_t heads, kv_heads, head_dim, value_dim, group;
};

// One tile of rows [row0, row0 + rows) and one query head over the keys each row sees, with the
// online softmax's running max `m`, sum `l` and unnormalized output `acc` per row.
LUMEN_VECTOR_CLONES
void attend_tile(const Geometry& g, const AttentionRows& queries, const AttentionRows& keys,
                 std::span<const float> values, const backend::AttentionConfig& config, int64_t row0, int64_t rows,
                 int64_t head, std::span<float> out, std::span<float> lse) {
  const auto& kpos = keys.positions;
  int64_t row_lo[kRowTile], row_hi[kRowTile];
  float m[kRowTile], l[kRowTile];
  std::vector<float> acc(static_cast<size_t>(rows * g.value_dim), 0.0f);
  int64_t lo = static_cast<int64_t>(kpos.size()), hi = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t p = queries.positions[static_cast<size_t>(row0 + r)];
    row_hi[r] = std::upper_bound(kpos.begin(), kpos.end(), p) - kpos.begin();
    row_lo[r] = config.sliding_window > 0
                    ? std::lower_bound(kpos.begin(), kpos.end(), p - config.sliding_window + 1) - kpos.begin()
                    : 0;
    lo = std::min(lo, row_lo[r]);
    hi = std::max(hi, row_hi[r]);
    m[r] = kNoKeys;
    l[r] = 0.0f;
  }
  const int64_t kv_head = head / g.group;
  const bool capped = config.softcap != 0.0f;
  float scores[kKeyTile];
  for (int64_t j0 = lo; j0 < hi; j0 += kKeyTile) {
    const int64_t j1 = std::min(hi, j0 + kKeyTile);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t begin = std::max(j0, row_lo[r]), end = std::min(j1, row_hi[r]);
      if (begin >= end) continue;
      const float* q = queries.data.data() + ((row0 + r) * g.heads + head) * g.head_dim;
      float tile_max = kNoKeys;
      for (int64_t j = begin; j < end; ++j) {
        float s = dot(q, keys.data.data() + (j * g.kv_heads + kv_head) * g.head_dim, g.head_dim) * config.scale;
        if (capped) s = config.softcap * std::tanh(s / config.softcap);
        scores[j - j0] = s;
        tile_max = std::max(tile_max, s);
      }
      const float m_new = std::max(m[r], tile_max);
      float* a = acc.data() + r * g.value_dim;
      if (m[r] != m_new && m[r] != kNoKeys) {
        const float c = std::exp(m[r] - m_new);
        l[r] *= c;
        for (int64_t d = 0; d < g.value_dim; ++d) a[d] *= c;
      }
      m[r] = m_new;
      for (int64_t j = begin; j < end; ++j) {
        const float p = std::exp(scores[j - j0] - m_new);
        l[r] += p;
        const float* v = values.data() + (j * g.kv_heads + kv_head) * g.value_dim;
        for (int64_t d = 0; d < g.value_dim; ++d) a[d] += p * v[d];
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = (row0 + r) * g.heads + head;
    float* o = out.data() + at * g.value_dim;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int64_t d = 0; d < g.value_dim; ++d) o[d] = acc[static_cast<size_t>(r * g.value_dim + d)] * inv;
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
