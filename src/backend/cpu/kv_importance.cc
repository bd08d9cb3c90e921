#include "backend/cpu/kv_importance.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

// Eight partial sums: without fast-math the compiler keeps one sum's order, and with it one lane.
float dot(const float* a, const float* b, int64_t n) {
  float part[8] = {};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    for (int64_t l = 0; l < 8; ++l) part[l] += a[d + l] * b[d + l];
  }
  float sum = 0.0f;
  for (; d < n; ++d) sum += a[d] * b[d];
  for (float p : part) sum += p;
  return sum;
}

int64_t cache_row(std::span<const int32_t> table, int64_t slot, int64_t block_size) {
  return static_cast<int64_t>(table[static_cast<size_t>(slot / block_size)]) * block_size + slot % block_size;
}

}  // namespace

void attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                      const AttentionConfig& config, float* scores, int64_t slot_stride, ThreadPool& pool) {
  // Scores are for choosing what to keep, not for the output: f32 and f16 keys (the default
  // cache) are enough, and a rotated (quantized) cache would need its own reading.
  if ((cache.k.type != tensor::DType::F32 && cache.k.type != tensor::DType::F16) || cache.rotated) {
    fail("importance-based KV eviction needs an f16 or f32 KV cache (not {})", tensor::dtype_info(cache.k.type).name);
  }
  if (!seq.visible.empty()) fail("importance-based KV eviction does not score token-tree rows");
  if (!seq.key_ends.empty()) fail("importance-based KV eviction does not score rows of spans that attend both ways");
  if (config.alibi_max_bias != 0.0f) fail("importance-based KV eviction does not score ALiBi models");
  if (first_row < 0 || first_row > seq.n_tokens) fail("attention_scores: row {} of {}", first_row, seq.n_tokens);
  const int64_t dim = config.head_dim, group = config.n_heads / config.n_kv_heads;
  const int64_t bs = cache.block_size, n_slots = seq.start_pos + seq.n_tokens;
  if (static_cast<int64_t>(seq.block_table.size()) * bs < n_slots) fail("attention_scores: the block table is short");
  const bool capped = config.softcap != 0.0f;
  // One task per KV head: each reads that head's keys once for all its query heads and rows,
  // and writes only its own column of `scores`.
  pool.parallel_for(config.n_kv_heads, [&](int64_t kv_head, unsigned) {
    std::vector<float> key(static_cast<size_t>(dim));
    std::vector<float> keys(static_cast<size_t>(n_slots * dim));
    for (int64_t s = 0; s < n_slots; ++s) {
      load_head(cache.k, cache_row(seq.block_table, s, bs), kv_head, dim, keys.data() + s * dim);
    }
    std::vector<float> row(static_cast<size_t>(n_slots));
    for (int64_t r = first_row; r < seq.n_tokens; ++r) {
      const int64_t pos = seq.start_pos + r;
      const int64_t lo = config.sliding_window > 0 ? std::max<int64_t>(0, pos - config.sliding_window + 1) : 0;
      for (int64_t g = 0; g < group; ++g) {
        const float* qh = q.row<float>((seq.first_token + r) * config.n_heads + kv_head * group + g);
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t s = lo; s <= pos; ++s) {
          float score = dot(qh, keys.data() + s * dim, dim) * config.scale;
          if (capped) score = config.softcap * std::tanh(score / config.softcap);
          row[static_cast<size_t>(s)] = score;
          max = std::max(max, score);
        }
        double sum = 0.0;
        for (int64_t s = lo; s <= pos; ++s) {
          row[static_cast<size_t>(s)] = std::exp(row[static_cast<size_t>(s)] - max);
          sum += row[static_cast<size_t>(s)];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (int64_t s = lo; s <= pos; ++s) scores[s * slot_stride + kv_head] += row[static_cast<size_t>(s)] * inv;
      }
    }
  });
}

void gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                    std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim) {
  if (values_in_keys(cache)) fail("importance-based KV eviction is not supported for multi-head latent attention");
  const int64_t bs = cache.block_size, n_blocks = cache.k.dims[2];
  const int64_t n_kv_heads = cache.k.dims[0] / head_dim;
  if (n_kv_heads <= 0 || keep.size() % static_cast<size_t>(n_kv_heads) != 0) {
    fail("gather_kv_rows: {} kept slots for {} KV heads", keep.size(), n_kv_heads);
  }
  const auto n_keep = static_cast<int64_t>(keep.size()) / n_kv_heads;
  if (static_cast<int64_t>(dst_table.size()) * bs < n_keep)
    fail("gather_kv_rows: {} slots in {} blocks", n_keep, dst_table.size());
  for (int32_t s : keep) {
    if (s < 0 || static_cast<int64_t>(s) >= static_cast<int64_t>(src_table.size()) * bs)
      fail("gather_kv_rows: slot {} out of range", s);
  }
  for (auto table : {src_table, dst_table}) {
    for (int32_t b : table) {
      if (b < 0 || b >= n_blocks) fail("gather_kv_rows: block {} is not in [0, {})", b, n_blocks);
    }
  }
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
