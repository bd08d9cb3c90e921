#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kv_store.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

constexpr int64_t kMaxQueryVectorsPerTask = 64;  // query rows x heads sharing one K/V pass
// Keys per tile. f16 rows are widened into staging tiles anyway, so such a tile may span
// blocks and the per-tile softmax bookkeeping is amortised over more keys; each staging tile
// stays within 16 KB so K and V together fit in L1. f32 rows are read in place, so an f32 tile
// is at most one block.
constexpr int64_t kStagingTileFloats = 4096;
constexpr int64_t kMaxTileKeys = 64;

int64_t tile_capacity(const KvLayer& cache, int64_t dim) {
  if (cache.k.type == tensor::DType::F32 && cache.v.type == tensor::DType::F32) return cache.block_size;
  return std::max(cache.block_size, std::clamp<int64_t>(kStagingTileFloats / dim, 1, kMaxTileKeys));
}

// Everything a task needs, shared read-only by all tasks of one call.
struct AttentionJob {
  const AttentionTileKernels* tiles;
  const TensorView* q;
  const KvLayer* cache;
  std::span<const SequenceSlice> seqs;
  const AttentionConfig* config;
  TensorView* out;
  AttentionScratch* scratch;
  int64_t group;           // query heads per KV head
  int64_t heads_per_task;  // query heads of one group handled together
  int64_t chunk;           // query rows per task
  bool exact_f16;          // reproduce llama.cpp's f16 probabilities (see attention.h)
  int64_t longest_span;    // most keys any query sees: sizes the materialised score rows
};

// One task: a chunk of one sequence's queries, one KV head, some of its query heads.
struct Task {
  const SequenceSlice* seq;
  int64_t q_begin;  // first query row within the sequence
  int64_t n_q;
  int64_t kv_head;
  int64_t head_begin;  // first query head
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Task task_at(const AttentionJob& job, int64_t index) {
  const int64_t subgroups = job.group / job.heads_per_task;
  const int64_t per_chunk = job.config->n_kv_heads * subgroups;
  int64_t chunk_index = index / per_chunk;
  const int64_t within = index % per_chunk;
  for (const SequenceSlice& seq : job.seqs) {
    const int64_t chunks = ceil_div(seq.n_tokens, job.chunk);
    if (chunk_index < chunks) {
      Task task{&seq, chunk_index * job.chunk, 0, within / subgroups, 0};
      task.n_q = std::min(job.chunk, seq.n_tokens - task.q_begin);
      task.head_begin = task.kv_head * job.group + (within % subgroups) * job.heads_per_task;
      return task;
    }
    chunk_index -= chunks;
  }
  return Task{nullptr, 0, 0, 0, 0};  // unreachable: index < task count
}

// Per-worker scratch, carved into the arrays a task uses.
struct TaskBuffers {
  float* q;       // nq x dim, the (possibly f16-rounded) queries
  float* acc;     // nq x dim
  float* max;     // nq
  float* sum;     // nq
  float* scores;  // nq x tile
  float* k_rows;  // tile x dim, widened f16 keys
  float* v_rows;  // tile x dim
  float* rows;    // nq x longest_span, whole score rows (exact_f16 mode only)
};

size_t rounded(size_t n) { return (n + 15) & ~size_t{15}; }

size_t scratch_floats(int64_t nq, int64_t dim, int64_t tile, int64_t span) {
  const auto q = static_cast<size_t>(nq), d = static_cast<size_t>(dim),
             b = static_cast<size_t>(tile);
  return 2 * rounded(q * d) + 2 * rounded(q) + rounded(q * b) + 2 * rounded(b * d) +
         rounded(q * static_cast<size_t>(span));
}

TaskBuffers carve(float* base, int64_t nq, int64_t dim, int64_t tile) {
  const auto q = static_cast<size_t>(nq), d = static_cast<size_t>(dim),
             b = static_cast<size_t>(tile);
  TaskBuffers t{};
  t.q = base;
  t.acc = t.q + rounded(q * d);
  t.max = t.acc + rounded(q * d);
  t.sum = t.max + rounded(q);
  t.scores = t.sum + rounded(q);
  t.k_rows = t.scores + rounded(q * b);
  t.v_rows = t.k_rows + rounded(b * d);
  t.rows = t.v_rows + rounded(b * d);
  return t;
}

// Keys at positions [first, first + n) of one sequence for one KV head as f32 rows: straight
// from an f32 cache (the tile then lies inside one block), otherwise widened (or copied) row by
// row into `staging`, following the block table. Returns the rows; *stride is in floats.
const float* key_rows(const AttentionTileKernels& tiles, const TensorView& cache,
                      const SequenceSlice& seq, int64_t first, int64_t n, int64_t offset,
                      int64_t dim, int64_t block_size, float* staging, int64_t* stride) {
  const bool one_block = first / block_size == (first + n - 1) / block_size;
  if (cache.type == tensor::DType::F32 && one_block) {
    *stride = static_cast<int64_t>(cache.row_bytes / sizeof(float));
    return cache.row<const float>(kv_row(seq, first, block_size)) + offset;
  }
  for (int64_t j = 0; j < n; ++j) {
    const int64_t row = kv_row(seq, first + j, block_size);
    if (cache.type == tensor::DType::F32) {
      std::memcpy(staging + j * dim, cache.row<const float>(row) + offset,
                  static_cast<size_t>(dim) * sizeof(float));
    } else {
      tiles.widen_f16(cache.row<const uint16_t>(row) + offset, dim, staging + j * dim);
    }
  }
  *stride = dim;
  return staging;
}

// The end of the tile that starts at `first` (a tile is at most one block for f32 rows).
int64_t tile_end_at(int64_t first, int64_t last_pos, int64_t tile, int64_t bs) {
  return tile == bs ? std::min(last_pos + 1, (first / bs + 1) * bs)
                    : std::min(last_pos + 1, first + tile);
}

// llama.cpp's default attention (no flash attention): whole score rows, softmax with the sum in
// double, probabilities rounded to f16 (the operand type of the product with an f16 V), then
// P V. Two passes over the keys instead of one; the result matches the reference's rounding.
void run_exact_f16(const AttentionJob& job, const Task& task, TaskBuffers& buf, int64_t nq,
                   int64_t first_pos, int64_t lowest, int64_t last_pos) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim, bs = cache.block_size, heads = job.heads_per_task;
  const int64_t tile = tile_capacity(cache, dim);
  const int64_t span = last_pos + 1 - lowest;
  const int64_t head_offset = task.kv_head * dim;
  const bool capped = cfg.softcap != 0.0f;
  const float score_scale = capped ? cfg.scale / cfg.softcap : cfg.scale;
  const float masked = -std::numeric_limits<float>::infinity();

  for (int64_t tile_first = lowest; tile_first <= last_pos;) {
    const int64_t tile_end = tile_end_at(tile_first, last_pos, tile, bs);
    const int64_t n_keys = tile_end - tile_first;
    int64_t k_stride = 0;
    const float* k = key_rows(*job.tiles, cache.k, *task.seq, tile_first, n_keys, head_offset, dim,
                              bs, buf.k_rows, &k_stride);
    job.tiles->qk(buf.q, nq, k, k_stride, n_keys, dim, buf.scores, n_keys);
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t pos = first_pos + i / heads;
      const int64_t lo = cfg.sliding_window > 0 ? std::max<int64_t>(0, pos - cfg.sliding_window + 1) : 0;
      float* row = buf.rows + i * span + (tile_first - lowest);
      for (int64_t j = 0; j < n_keys; ++j) {
        const int64_t key = tile_first + j;
        const float s = buf.scores[i * n_keys + j];
        row[j] = key < lo || key > pos ? masked
                 : capped             ? cfg.softcap * std::tanh(s * score_scale)
                                      : s * score_scale;
      }
    }
    tile_first = tile_end;
  }
  for (int64_t i = 0; i < nq; ++i) {
    float* row = buf.rows + i * span;
    float max = masked;
    for (int64_t j = 0; j < span; ++j) max = std::max(max, row[j]);
    double sum = 0.0;
    for (int64_t j = 0; j < span; ++j) {
      row[j] = row[j] == masked ? 0.0f : std::exp(row[j] - max);
      sum += row[j];
    }
    const float inverse = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
    for (int64_t j = 0; j < span; ++j) {
      row[j] = tensor::fp16_to_float(tensor::float_to_fp16(row[j] * inverse));
    }
  }
  std::fill(buf.acc, buf.acc + nq * dim, 0.0f);
  for (int64_t tile_first = lowest; tile_first <= last_pos;) {
    const int64_t tile_end = tile_end_at(tile_first, last_pos, tile, bs);
    int64_t v_stride = 0;
    const float* v = key_rows(*job.tiles, cache.v, *task.seq, tile_first, tile_end - tile_first,
                              head_offset, dim, bs, buf.v_rows, &v_stride);
    job.tiles->pv(buf.rows + (tile_first - lowest), nq, span, v, v_stride, tile_end - tile_first,
                  dim, buf.acc);
    tile_first = tile_end;
  }
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    float* dst = job.out->row<float>(token * cfg.n_heads + task.head_begin + i % heads);
    std::copy_n(buf.acc + i * dim, dim, dst);
  }
}

void run_task(const AttentionJob& job, const Task& task, unsigned worker) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim;
  const int64_t bs = cache.block_size;
  const int64_t heads = job.heads_per_task;
  const int64_t nq = task.n_q * heads;
  const int64_t tile = tile_capacity(cache, dim);
  TaskBuffers buf = carve(job.scratch->per_worker[worker].data(), nq, dim, tile);

  // Query vector i is query row i / heads, head head_begin + i % heads.
  const bool round_q = cache.k.type == tensor::DType::F16;
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    const float* src = job.q->row<const float>(token * cfg.n_heads + task.head_begin + i % heads);
    float* dst = buf.q + i * dim;
    for (int64_t d = 0; d < dim; ++d) {
      dst[d] = round_q ? tensor::fp16_to_float(tensor::float_to_fp16(src[d])) : src[d];
    }
  }
  std::fill(buf.acc, buf.acc + nq * dim, 0.0f);
  std::fill(buf.max, buf.max + nq, -std::numeric_limits<float>::infinity());
  std::fill(buf.sum, buf.sum + nq, 0.0f);

  const int64_t first_pos = task.seq->start_pos + task.q_begin;
  const int64_t last_pos = first_pos + task.n_q - 1;
  const int64_t window = cfg.sliding_window;
  const int64_t lowest = window > 0 ? std::max<int64_t>(0, first_pos - window + 1) : 0;
  const bool capped = cfg.softcap != 0.0f;
  const float score_scale = capped ? cfg.scale / cfg.softcap : cfg.scale;
  const int64_t head_offset = task.kv_head * dim;

  if (job.exact_f16) {
    run_exact_f16(job, task, buf, nq, first_pos, lowest, last_pos);
    return;
  }
  for (int64_t tile_first = lowest; tile_first <= last_pos;) {  // key positions of this tile
    const int64_t tile_end = tile == bs ? std::min(last_pos + 1, (tile_first / bs + 1) * bs)
                                        : std::min(last_pos + 1, tile_first + tile);
    const int64_t n_keys = tile_end - tile_first;
    int64_t k_stride = 0, v_stride = 0;
    const float* k = key_rows(*job.tiles, cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs,
                              buf.k_rows, &k_stride);
    job.tiles->qk(buf.q, nq, k, k_stride, n_keys, dim, buf.scores, n_keys);

    for (int64_t i = 0; i < nq; ++i) {
      const int64_t pos = first_pos + i / heads;
      const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
      const int64_t begin = std::clamp<int64_t>(lo - tile_first, 0, n_keys);
      const int64_t end = std::clamp<int64_t>(pos + 1 - tile_first, 0, n_keys);
      float* s = buf.scores + i * n_keys;
      if (begin >= end) {
        std::fill(s, s + n_keys, 0.0f);
        continue;
      }
      float tile_max = -std::numeric_limits<float>::infinity();
      for (int64_t j = begin; j < end; ++j) {
        s[j] = capped ? cfg.softcap * std::tanh(s[j] * score_scale) : s[j] * score_scale;
        tile_max = std::max(tile_max, s[j]);
      }
      const float new_max = std::max(buf.max[i], tile_max);
      const float correction = std::exp(buf.max[i] - new_max);  // 0 on the first tile
      std::fill(s, s + begin, 0.0f);  // masked keys get weight 0
      std::fill(s + end, s + n_keys, 0.0f);
      const float tile_sum = job.tiles->exp_shifted(s + begin, end - begin, new_max);
      buf.sum[i] = buf.sum[i] * correction + tile_sum;
      buf.max[i] = new_max;
      if (correction != 1.0f) {
        float* acc = buf.acc + i * dim;
        for (int64_t d = 0; d < dim; ++d) acc[d] *= correction;
      }
    }
    const float* v = key_rows(*job.tiles, cache.v, *task.seq, tile_first, n_keys, head_offset, dim, bs,
                              buf.v_rows, &v_stride);
    job.tiles->pv(buf.scores, nq, n_keys, v, v_stride, n_keys, dim, buf.acc);
    tile_first = tile_end;
  }

  for (int64_t i = 0; i < nq; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    float* dst = job.out->row<float>(token * cfg.n_heads + task.head_begin + i % heads);
    const float inv = buf.sum[i] > 0.0f ? 1.0f / buf.sum[i] : 0.0f;
    const float* acc = buf.acc + i * dim;
    for (int64_t d = 0; d < dim; ++d) dst[d] = acc[d] * inv;
  }
}

void check_inputs(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                  const AttentionConfig& cfg, const TensorView& out) {
  if (cfg.head_dim <= 0 || cfg.n_heads <= 0 || cfg.n_kv_heads <= 0 ||
      cfg.n_heads % cfg.n_kv_heads != 0) {
    fail("attention: need positive head_dim and n_heads a multiple of n_kv_heads (got {}, {}, {})",
         cfg.head_dim, cfg.n_heads, cfg.n_kv_heads);
  }
  if (cfg.sliding_window < 0 || !std::isfinite(cfg.scale) || !std::isfinite(cfg.softcap) ||
      cfg.softcap < 0.0f) {
    fail("attention: invalid sliding window, scale or softcap");
  }
  for (const TensorView* t : {&q, &out}) {
    if (t->type != tensor::DType::F32 || t->dims[0] != cfg.head_dim || t->dims[1] != cfg.n_heads ||
        t->row_bytes < static_cast<size_t>(cfg.head_dim) * sizeof(float) ||
        t->row_bytes % sizeof(float) != 0 || t->data == nullptr) {
      fail("attention: q and out must be f32 {{head_dim {}, n_heads {}, tokens}}", cfg.head_dim,
           cfg.n_heads);
    }
  }
  if (q.rows() != out.rows()) fail("attention: q and out hold different token counts");
  check_kv_layer(cache, cfg.head_dim * cfg.n_kv_heads, "attention");
  for (const TensorView* t : {&cache.k, &cache.v}) {
    if (t->row_bytes % (t->type == tensor::DType::F32 ? 4 : 2) != 0) {
      fail("attention: cache rows are not aligned to their element size");
    }
  }
  check_sequences(seqs, q.rows() / cfg.n_heads, cache, "attention");
}

}  // namespace

void attention_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                    std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                    TensorView& out, ThreadPool& pool, AttentionScratch& scratch) {
  check_inputs(q, cache, seqs, config, out);
  AttentionJob job{&tiles, &q, &cache, seqs, &config, &out, &scratch, 0, 0, 0, false, 0};
  job.exact_f16 = cache.v.type == tensor::DType::F16;
  job.group = config.n_heads / config.n_kv_heads;

  int64_t chunks = 0;
  int64_t longest = 0;
  for (const SequenceSlice& seq : seqs) {
    longest = std::max(longest, seq.n_tokens);
    job.longest_span = std::max(job.longest_span, seq.start_pos + seq.n_tokens);
  }
  // Process a whole group of query heads together unless that leaves too few tasks to keep
  // every thread busy (decode of one sequence): then split the group.
  job.heads_per_task = job.group;
  const int64_t wanted_tasks = 2 * static_cast<int64_t>(pool.size());
  for (;;) {
    job.chunk = std::clamp<int64_t>(kMaxQueryVectorsPerTask / job.heads_per_task, 1, kMaxQueryVectorsPerTask);
    chunks = 0;
    for (const SequenceSlice& seq : seqs) chunks += ceil_div(seq.n_tokens, job.chunk);
    if (job.heads_per_task == 1 || chunks * config.n_kv_heads * (job.group / job.heads_per_task) >= wanted_tasks) {
      break;
    }
    int64_t smaller = job.heads_per_task - 1;
    while (job.group % smaller != 0) --smaller;
    job.heads_per_task = smaller;
  }
  const int64_t n_tasks = chunks * config.n_kv_heads * (job.group / job.heads_per_task);
  if (n_tasks == 0) return;

  const int64_t max_q = std::min(job.chunk, longest) * job.heads_per_task;
  const size_t need = scratch_floats(max_q, config.head_dim, tile_capacity(cache, config.head_dim),
                                     job.exact_f16 ? job.longest_span : 0);
  scratch.per_worker.resize(std::max<size_t>(scratch.per_worker.size(), pool.size()));
  for (auto& buffer : scratch.per_worker) {
    if (buffer.size() < need) buffer.resize(need);
  }
  const AttentionJob* shared = &job;
  pool.parallel_for(n_tasks, [shared](int64_t index, unsigned worker) {
    run_task(*shared, task_at(*shared, index), worker);
  });
}

void attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
               const AttentionConfig& config, TensorView& out, ThreadPool& pool,
               AttentionScratch& scratch) {
  attention_with(best_attention_tiles(), q, cache, seqs, config, out, pool, scratch);
}

}  // namespace lumen::backend::cpu
