#include "backend/cpu/kv_importance.h"

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/common/kv_eviction_checks.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

// Head `head` of cache row `row` (block * block_size + slot) widened to f32.
void load_head(const TensorView& t, int64_t row, int64_t head, int64_t dim, float* out) {
  const uint8_t* base = static_cast<const uint8_t*>(t.data) + static_cast<size_t>(row) * t.row_bytes;
  if (t.type == tensor::DType::F32) {
    std::memcpy(out, reinterpret_cast<const float*>(base) + head * dim, static_cast<size_t>(dim) * sizeof(float));
    return;
  }
  const auto* half = reinterpret_cast<const uint16_t*>(base) + head * dim;
  for (int64_t d = 0; d < dim; ++d) out[d] = tensor::fp16_to_float(half[d]);
}

int64_t cache_row(std::span<const int32_t> table, int64_t slot, int64_t block_size) {
  return static_cast<int64_t>(table[static_cast<size_t>(slot / block_size)]) * block_size + slot % block_size;
}

// Rows of one task: a fixed count chosen from the number of scored rows alone (never from the
// pool's size), so the partial columns and their sum are the same for any thread count. At least
// kMinRowsPerTask rows keep a task's key widening small next to its q.k work; at most
// kMaxTasksPerHead tasks per KV head bound the partial columns' memory (that many columns of
// the context's length per KV head) while leaving tasks enough to balance two to a dozen threads.
constexpr int64_t kMinRowsPerTask = 32, kMaxTasksPerHead = 16;

}  // namespace

void attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                      const AttentionConfig& config, float* scores, int64_t slot_stride, ThreadPool& pool) {
  attention_scores_with(best_attention_tiles(), q, cache, seq, first_row, config, scores, slot_stride, pool);
}

void attention_scores_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                           const SequenceSlice& seq, int64_t first_row, const AttentionConfig& config, float* scores,
                           int64_t slot_stride, ThreadPool& pool) {
  // The arguments were checked in front of every backend (common/kv_eviction_checks.h); these
  // tile tests call here directly, so the checks run here too.
  if (first_row < 0 || first_row > seq.n_tokens) fail("attention_scores: row {} of {}", first_row, seq.n_tokens);
  common::check_attention_scores(cache, seq, config);
  if (cache.v.type == tensor::DType::F16) {
    // The attention's exact path holds its probabilities: the same scores attention_scored
    // gives, bit for bit, from an attention into a throwaway output.
    const int64_t vdim = attention_value_dim(config);
    std::vector<float> discarded(static_cast<size_t>(vdim * config.n_heads * q.dims[2]));
    TensorView out{tensor::DType::F32,
                   {vdim, config.n_heads, q.dims[2], 1},
                   static_cast<size_t>(vdim) * sizeof(float),
                   discarded.data()};
    AttentionScratch scratch;
    const AttentionScoreTarget target{0, first_row, scores, slot_stride};
    attention_scored_with(tiles, q, cache, std::span<const SequenceSlice>(&seq, 1), config, {&target, 1}, out, pool,
                          scratch);
    return;
  }
  const int64_t dim = config.head_dim, group = config.n_heads / config.n_kv_heads;
  const int64_t bs = cache.block_size, n_slots = seq.start_pos + seq.n_tokens;
  const int64_t n_rows = seq.n_tokens - first_row;
  if (n_rows == 0) return;
  const bool capped = config.softcap != 0.0f;
  const int64_t rows_per_task = std::max(kMinRowsPerTask, (n_rows + kMaxTasksPerHead - 1) / kMaxTasksPerHead);
  const int64_t tasks_per_head = (n_rows + rows_per_task - 1) / rows_per_task;
  // The slots a row block reads: from its first row's window start to its last row's position.
  auto first_slot = [&](int64_t block) {
    const int64_t pos = seq.start_pos + first_row + block * rows_per_task;
    return config.sliding_window > 0 ? std::max<int64_t>(0, pos - config.sliding_window + 1) : 0;
  };
  auto end_slot = [&](int64_t block) {
    return seq.start_pos + std::min(seq.n_tokens, first_row + (block + 1) * rows_per_task);
  };
  // Each task's partial score column over its own slot range, laid out one after another.
  std::vector<int64_t> offset(static_cast<size_t>(tasks_per_head + 1), 0);
  for (int64_t b = 0; b < tasks_per_head; ++b) {
    offset[static_cast<size_t>(b + 1)] = offset[static_cast<size_t>(b)] + end_slot(b) - first_slot(b);
  }
  std::vector<float> partial(static_cast<size_t>(config.n_kv_heads * offset.back()), 0.0f);

  auto add_columns = [&](int64_t kv_head, int64_t s0, int64_t s1) {
    const float* head_partial = partial.data() + kv_head * offset.back();
    for (int64_t s = s0; s < s1; ++s) {
      float total = scores[s * slot_stride + kv_head];
      for (int64_t b = 0; b < tasks_per_head; ++b) {
        if (s >= first_slot(b) && s < end_slot(b))
          total += head_partial[offset[static_cast<size_t>(b)] + s - first_slot(b)];
      }
      scores[s * slot_stride + kv_head] = total;
    }
  };

  // Task (KV head, row block): the head's keys for the block's slot range widened to f32 once,
  // then every row's query heads against them through the attention kernels' q.k tiles. The
  // last blocks (the longest rows) are handed out first, so no long task starts at the end.
  pool.parallel_for(config.n_kv_heads * tasks_per_head, [&](int64_t task, unsigned) {
    const int64_t kv_head = task % config.n_kv_heads, block = tasks_per_head - 1 - task / config.n_kv_heads;
    const int64_t lo0 = first_slot(block), n_keys = end_slot(block) - lo0;
    std::vector<float> keys(static_cast<size_t>(n_keys * dim));
    for (int64_t s = 0; s < n_keys; ++s) {
      load_head(cache.k, cache_row(seq.block_table, lo0 + s, bs), kv_head, dim, keys.data() + s * dim);
    }
    float* column = partial.data() + kv_head * offset.back() + offset[static_cast<size_t>(block)];
    std::vector<float> queries(static_cast<size_t>(group * dim));
    std::vector<float> row_scores(static_cast<size_t>(group * n_keys));
    const int64_t r_end = std::min(seq.n_tokens, first_row + (block + 1) * rows_per_task);
    for (int64_t r = first_row + block * rows_per_task; r < r_end; ++r) {
      const int64_t pos = seq.start_pos + r;
      const int64_t lo = config.sliding_window > 0 ? std::max<int64_t>(0, pos - config.sliding_window + 1) : 0;
      const int64_t nk = pos - lo + 1;
      for (int64_t g = 0; g < group; ++g) {
        std::memcpy(queries.data() + g * dim,
                    q.row<float>((seq.first_token + r) * config.n_heads + kv_head * group + g),
                    static_cast<size_t>(dim) * sizeof(float));
      }
      tiles.qk(queries.data(), group, keys.data() + (lo - lo0) * dim, dim, nk, dim, row_scores.data(), n_keys);
      for (int64_t g = 0; g < group; ++g) {
        float* row = row_scores.data() + g * n_keys;
        tiles.scale(row, nk, config.scale, row);
        if (capped) {
          for (int64_t s = 0; s < nk; ++s) row[s] = config.softcap * std::tanh(row[s] / config.softcap);
        }
        // The sum in double, as before: thousands of terms of very different sizes.
        const double sum = tiles.exp_shifted_f64(row, nk, tiles.max(row, nk));
        const auto inv = static_cast<float>(1.0 / sum);
        float* out = column + (lo - lo0);
        for (int64_t s = 0; s < nk; ++s) out[s] += row[s] * inv;
      }
    }
    if (tasks_per_head == 1) add_columns(kv_head, 0, n_slots);
  });

  // The blocks' columns added into the table in block order, the same order for any thread
  // count; tasks split the slots so that each writes only its own entries.
  if (tasks_per_head == 1) return;  // each task added its own column (a decode step's one row)
  constexpr int64_t kSlotsPerTask = 1024;
  const int64_t slot_tasks = (n_slots + kSlotsPerTask - 1) / kSlotsPerTask;
  pool.parallel_for(config.n_kv_heads * slot_tasks, [&](int64_t task, unsigned) {
    const int64_t s0 = task % slot_tasks * kSlotsPerTask;
    add_columns(task / slot_tasks, s0, std::min(n_slots, s0 + kSlotsPerTask));
  });
}

void gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                    std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim) {
  const int64_t n_keep = common::check_gather_kv_rows(cache, src_table, dst_table, keep, head_dim);
  const int64_t bs = cache.block_size, n_kv_heads = cache.k.dims[0] / head_dim;
  // Every kept head slice is read before any is written: a destination block may be one of the
  // sources (compaction in place), and this way no order of slots can overwrite a later source.
  for (const auto& [t, dim] : {std::pair{&cache.k, head_dim}, std::pair{&cache.v, value_dim}}) {
    const size_t slice = kv_slice_bytes(t->type, dim);
    std::vector<uint8_t> kept(static_cast<size_t>(keep.size()) * slice);
    auto* base = static_cast<uint8_t*>(t->data);
    for (int64_t h = 0; h < n_kv_heads; ++h) {
      const size_t offset = kv_slice_bytes(t->type, h * dim);
      for (int64_t j = 0; j < n_keep; ++j) {
        const int64_t row = cache_row(src_table, keep[static_cast<size_t>(h * n_keep + j)], bs);
        std::memcpy(kept.data() + static_cast<size_t>(h * n_keep + j) * slice,
                    base + static_cast<size_t>(row) * t->row_bytes + offset, slice);
      }
    }
    for (int64_t h = 0; h < n_kv_heads; ++h) {
      const size_t offset = kv_slice_bytes(t->type, h * dim);
      for (int64_t j = 0; j < n_keep; ++j) {
        const int64_t row = cache_row(dst_table, j, bs);
        std::memcpy(base + static_cast<size_t>(row) * t->row_bytes + offset,
                    kept.data() + static_cast<size_t>(h * n_keep + j) * slice, slice);
      }
    }
  }
}

}  // namespace lumen::backend::cpu
