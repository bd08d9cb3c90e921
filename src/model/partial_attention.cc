#include "model/partial_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/attention_tiles.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace lumen::model {

namespace {

constexpr float kNoKeys = -std::numeric_limits<float>::infinity();

// Keys per tile: a tile's scores for every query of a task (64 x 64 f32) and the tile's K/V rows
// stay in L1/L2 while the task's queries go through them.
constexpr int64_t kKeyTile = 64;
// Queries per task, all of its rows' heads of one KV group together: enough that each key row
// loaded serves many dot products, few enough that a long prompt gives every thread many tasks.
constexpr int64_t kQueriesPerTask = 64;

struct Geometry {
  int64_t heads, kv_heads, head_dim, value_dim, group;
};

// A block's rows in either storage; the f16 form is read through one pointer per key, as the
// backend's tiles take it.
struct BlockRows {
  const float* k32 = nullptr;
  const float* v32 = nullptr;
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
  std::span<const int32_t> positions;
};

// One task's scratch, per thread and grown only when a larger shape comes (the pool's threads
// live as long as the process, so this is allocated once per shape, not per call).
struct TaskScratch {
  std::vector<float> queries, scores, acc, max, sum;
  std::vector<int64_t> lo, hi;
  std::vector<const uint16_t*> k_rows, v_rows;
};

TaskScratch& scratch_of_this_thread() {
  thread_local TaskScratch scratch;
  return scratch;
}

// Rows [row0, row0 + rows) and the query heads of KV head `kv_head` over the block's keys, with
// the online softmax's running max, sum and unnormalized output per query: per key tile, every
// query's scores (one qk call), each query's softmax update over the keys its row sees (masked
// keys weigh 0), then the weighted values (one pv call).
void attend_task(const backend::cpu::AttentionTileKernels& tiles, const Geometry& g, const AttentionRows& queries,
                 const BlockRows& block, const backend::AttentionConfig& config, int64_t row0, int64_t rows,
                 int64_t kv_head, std::span<float> out, std::span<float> lse) {
  TaskScratch& s = scratch_of_this_thread();
  const int64_t nq = rows * g.group;
  s.queries.resize(static_cast<size_t>(nq * g.head_dim));
  s.scores.resize(static_cast<size_t>(nq * kKeyTile));
  s.acc.assign(static_cast<size_t>(nq * g.value_dim), 0.0f);
  s.max.assign(static_cast<size_t>(nq), kNoKeys);
  s.sum.assign(static_cast<size_t>(nq), 0.0f);
  s.lo.resize(static_cast<size_t>(rows));
  s.hi.resize(static_cast<size_t>(rows));
  const auto& kpos = block.positions;
  int64_t lo = static_cast<int64_t>(kpos.size()), hi = 0;
  for (int64_t r = 0; r < rows; ++r) {
    // The row's heads of this group are adjacent in its query row: one copy makes them the
    // tile's contiguous queries.
    std::memcpy(s.queries.data() + r * g.group * g.head_dim,
                queries.data.data() + ((row0 + r) * g.heads + kv_head * g.group) * g.head_dim,
                static_cast<size_t>(g.group * g.head_dim) * sizeof(float));
    const int32_t p = queries.positions[static_cast<size_t>(row0 + r)];
    const int64_t row_hi = std::upper_bound(kpos.begin(), kpos.end(), p) - kpos.begin();
    const int64_t row_lo =
        config.sliding_window > 0
            ? std::lower_bound(kpos.begin(), kpos.end(), p - config.sliding_window + 1) - kpos.begin()
            : 0;
    s.lo[static_cast<size_t>(r)] = row_lo;
    s.hi[static_cast<size_t>(r)] = std::max(row_lo, row_hi);
    if (row_lo < row_hi) lo = std::min(lo, row_lo), hi = std::max(hi, row_hi);
  }
  const int64_t k_stride = g.kv_heads * g.head_dim, v_stride = g.kv_heads * g.value_dim;
  const bool f16 = block.k16 != nullptr;
  if (f16) {
    s.k_rows.resize(kKeyTile);
    s.v_rows.resize(kKeyTile);
  }
  const bool capped = config.softcap != 0.0f;
  for (int64_t j0 = lo; j0 < hi; j0 += kKeyTile) {
    const int64_t nk = std::min(hi, j0 + kKeyTile) - j0;
    float* scores = s.scores.data();
    if (f16) {
      for (int64_t j = 0; j < nk; ++j) {
        s.k_rows[static_cast<size_t>(j)] = block.k16 + (j0 + j) * k_stride + kv_head * g.head_dim;
        s.v_rows[static_cast<size_t>(j)] = block.v16 + (j0 + j) * v_stride + kv_head * g.value_dim;
      }
      tiles.qk_f16(s.queries.data(), nq, s.k_rows.data(), nk, g.head_dim, scores, kKeyTile);
    } else {
      tiles.qk(s.queries.data(), nq, block.k32 + j0 * k_stride + kv_head * g.head_dim, k_stride, nk, g.head_dim, scores,
               kKeyTile);
    }
    for (int64_t r = 0; r < rows; ++r) {
      // The keys of the tile this row sees: all of them in a tile under the causal diagonal and
      // inside the window, the usual case, which then needs no mask.
      const int64_t b = std::clamp(s.lo[static_cast<size_t>(r)] - j0, int64_t{0}, nk);
      const int64_t e = std::clamp(s.hi[static_cast<size_t>(r)] - j0, int64_t{0}, nk);
      for (int64_t h = 0; h < g.group; ++h) {
        const int64_t i = r * g.group + h;
        float* p = scores + i * kKeyTile;
        if (b >= e) {
          std::fill(p, p + nk, 0.0f);
          continue;
        }
        if (capped) {
          for (int64_t j = b; j < e; ++j) p[j] = config.softcap * std::tanh(p[j] * (config.scale / config.softcap));
        } else {
          tiles.scale(p + b, e - b, config.scale, p + b);
        }
        float& m = s.max[static_cast<size_t>(i)];
        float& l = s.sum[static_cast<size_t>(i)];
        const float m_new = std::max(m, tiles.max(p + b, e - b));
        if (m != m_new && m != kNoKeys) {
          const float c = std::exp(m - m_new);
          l *= c;
          float* a = s.acc.data() + i * g.value_dim;
          tiles.scale(a, g.value_dim, c, a);
        }
        m = m_new;
        std::fill(p, p + b, 0.0f);
        std::fill(p + e, p + nk, 0.0f);
        l += tiles.exp_shifted(p + b, e - b, m_new);
      }
    }
    if (f16) {
      tiles.pv_f16(scores, nq, kKeyTile, s.v_rows.data(), nk, g.value_dim, s.acc.data());
    } else {
      tiles.pv(scores, nq, kKeyTile, block.v32 + j0 * v_stride + kv_head * g.value_dim, v_stride, nk, g.value_dim,
               s.acc.data());
    }
  }
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t at = (row0 + i / g.group) * g.heads + kv_head * g.group + i % g.group;
    const float l = s.sum[static_cast<size_t>(i)];
    float* o = out.data() + at * g.value_dim;
    const float* a = s.acc.data() + i * g.value_dim;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int64_t d = 0; d < g.value_dim; ++d) o[d] = a[d] * inv;
    lse[static_cast<size_t>(at)] = l > 0.0f ? s.max[static_cast<size_t>(i)] + std::log(l) : kNoKeys;
  }
}

Geometry checked_geometry(const backend::AttentionConfig& config, const AttentionRows& queries,
                          std::span<const int32_t> key_positions, size_t k_size, size_t v_size, std::span<float> out,
                          std::span<float> lse) {
  const Geometry g{config.n_heads, config.n_kv_heads, config.head_dim, backend::attention_value_dim(config),
                   config.n_kv_heads > 0 ? config.n_heads / config.n_kv_heads : 0};
  if (g.heads <= 0 || g.kv_heads <= 0 || g.head_dim <= 0 || g.value_dim <= 0 || g.heads % g.kv_heads != 0) {
    fail("partial attention: {} query heads over {} KV heads of {} values", g.heads, g.kv_heads, g.head_dim);
  }
  const auto n_rows = static_cast<int64_t>(queries.positions.size());
  const auto n_keys = static_cast<int64_t>(key_positions.size());
  if (static_cast<int64_t>(queries.data.size()) != n_rows * g.heads * g.head_dim ||
      static_cast<int64_t>(k_size) != n_keys * g.kv_heads * g.head_dim ||
      static_cast<int64_t>(v_size) != n_keys * g.kv_heads * g.value_dim ||
      static_cast<int64_t>(out.size()) != n_rows * g.heads * g.value_dim ||
      static_cast<int64_t>(lse.size()) != n_rows * g.heads) {
    fail("partial attention: buffers do not match {} rows and {} keys", n_rows, n_keys);
  }
  if (!std::is_sorted(queries.positions.begin(), queries.positions.end()) ||
      !std::is_sorted(key_positions.begin(), key_positions.end())) {
    fail("partial attention: positions must ascend");
  }
  return g;
}

void run_tasks(const Geometry& g, const AttentionRows& queries, const BlockRows& block,
               const backend::AttentionConfig& config, std::span<float> out, std::span<float> lse,
               const PartialAttentionRun& run) {
  const backend::cpu::AttentionTileKernels& tiles =
      run.tiles != nullptr ? *run.tiles : backend::cpu::best_attention_tiles();
  const auto n_rows = static_cast<int64_t>(queries.positions.size());
  const int64_t rows_per_task = std::max<int64_t>(1, kQueriesPerTask / g.group);
  const int64_t row_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
  const auto task = [&](int64_t t, unsigned /*worker*/) {
    const int64_t row0 = (t / g.kv_heads) * rows_per_task;
    attend_task(tiles, g, queries, block, config, row0, std::min(rows_per_task, n_rows - row0), t % g.kv_heads, out,
                lse);
  };
  const int64_t tasks = row_tasks * g.kv_heads;
  if (run.pool != nullptr && run.pool->size() > 1 && tasks > 1) {
    run.pool->parallel_for(tasks, task);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t, 0);
  }
}

}  // namespace

void partial_attention(const AttentionRows& queries, const AttentionRows& keys, std::span<const float> values,
                       const backend::AttentionConfig& config, std::span<float> out, std::span<float> lse,
                       const PartialAttentionRun& run) {
  const Geometry g = checked_geometry(config, queries, keys.positions, keys.data.size(), values.size(), out, lse);
  run_tasks(g, queries, {keys.data.data(), values.data(), nullptr, nullptr, keys.positions}, config, out, lse, run);
}

void partial_attention(const AttentionRows& queries, const F16KvRows& block, const backend::AttentionConfig& config,
                       std::span<float> out, std::span<float> lse, const PartialAttentionRun& run) {
  const Geometry g =
      checked_geometry(config, queries, block.positions, block.keys.size(), block.values.size(), out, lse);
  run_tasks(g, queries, {nullptr, nullptr, block.keys.data(), block.values.data(), block.positions}, config, out, lse,
            run);
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
