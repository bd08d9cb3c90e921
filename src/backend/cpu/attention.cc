#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/attention_row_masks.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kv_store.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

constexpr int64_t kMaxQueryVectorsPerTask = 64;  // query rows x heads sharing one K/V pass
// Keys per tile. Once a cache has f16 rows, a tile may span blocks (f16 rows are read through
// per-key pointers, f32 ones copied into a staging tile) and the per-tile softmax bookkeeping is
// amortised over more keys; a tile of f32 rows stays within 16 KB so K and V together fit in
// L1. Tile extents shape the online softmax's rounding, so they stay as they were when every
// f16 row went through an f32 staging tile. With f32 rows only, rows are read in place, so a
// tile is at most one block.
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
  float* k_rows;  // tile x dim, f32 keys copied from several blocks
  float* v_rows;  // tile x dim
  float* rows;    // nq x longest_span, whole score rows (exact_f16 mode only)
  const uint16_t** k_pointers;  // tile, f16 key rows
  const uint16_t** v_pointers;  // tile, f16 value rows
};

constexpr int64_t kPointerArrays = 2;

size_t rounded(size_t n) { return (n + 15) & ~size_t{15}; }

// dim: the wider of a key and a value row (the accumulators and staging tiles hold either).
size_t scratch_floats(int64_t nq, int64_t dim, int64_t tile, int64_t span) {
  const auto q = static_cast<size_t>(nq), d = static_cast<size_t>(dim),
             b = static_cast<size_t>(tile);
  return 2 * rounded(q * d) + 2 * rounded(q) + rounded(q * b) + 2 * rounded(b * d) +
         rounded(q * static_cast<size_t>(span));
}

TaskBuffers carve(float* base, const uint16_t** pointers, int64_t nq, int64_t dim, int64_t tile) {
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
  t.k_pointers = pointers;
  t.v_pointers = pointers + tile;
  return t;
}

// Walks positions [first, first + n) of one sequence through its block table, without a
// division per row: fn(j, address of one KV head's slice of position first + j's row).
template <typename Fn>
void for_each_row(const TensorView& cache, const SequenceSlice& seq, int64_t first, int64_t n,
                  size_t offset_bytes, int64_t block_size, Fn&& fn) {
  int64_t block = first / block_size, slot = first % block_size;
  const auto* base = static_cast<const char*>(cache.data) + offset_bytes;
  for (int64_t j = 0; j < n; ++j) {
    const auto row = static_cast<int64_t>(seq.block_table[static_cast<size_t>(block)]) * block_size + slot;
    fn(j, base + static_cast<size_t>(row) * cache.row_bytes);
    if (++slot == block_size) {
      slot = 0;
      ++block;
    }
  }
}


// Requests the cache lines of positions [first, first + n) of one KV head. A sequence's rows
// are scattered over blocks and a task reads only its head's slice of each row, which the
// hardware prefetcher cannot follow: without this the tile kernels wait on memory, one miss
// after another (profiled with 32 sequences decoding: most of attention's time). A tile's keys
// and values are requested together when the tile starts, so their misses overlap each other
// and the scores' arithmetic. Measured on Zen 4 (32 sequences x 30 layers of SmolLM2 decode,
// attention alone): 2.3x faster than with no requests. Requests go to L2 (prefetcht1): into
// L1 they stall on its few miss buffers (1.3x); requesting further ahead (the next tile too,
// or the whole span) piles up requests and does no better (1.7x to 2.2x).
// noipa, and no lambda: a function whose only effect is prefetching looks pure to GCC, which
// then deletes its calls.
[[gnu::noipa]] void request_rows(const TensorView& cache, const SequenceSlice& seq, int64_t first,
                                 int64_t n, int64_t offset, int64_t dim, int64_t block_size) {
  const size_t bytes = kv_slice_bytes(cache.type, dim);
  const auto* base = static_cast<const char*>(cache.data) + kv_slice_bytes(cache.type, offset);
  int64_t block = first / block_size, slot = first % block_size;
  for (int64_t j = 0; j < n; ++j) {
    const auto row = static_cast<int64_t>(seq.block_table[static_cast<size_t>(block)]) * block_size + slot;
    const char* address = base + static_cast<size_t>(row) * cache.row_bytes;
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(address + line, 0, 2);
    if (++slot == block_size) {
      slot = 0;
      ++block;
    }
  }
}

// The rows of one tile of keys (or values) of one KV head, as the tile kernels read them.
struct TileRows {
  const float* f32 = nullptr;  // f32 rows, `stride` floats apart
  int64_t stride = 0;
  const uint16_t* const* f16 = nullptr;  // f16 rows, read in place: one pointer per key
};

// Positions [first, first + n) of one sequence for one KV head: f16 rows as pointers into the
// cache (recorded in `pointers`); f32 rows straight from the cache when the tile lies inside one
// block, otherwise copied into `staging`; compressed rows (bf16, q8_0, q4_0, fp8) dequantized
// into `staging`, one head's slice of each row (whole blocks: the head starts at a block
// boundary), so the cache itself never exists in a wider copy.
// The widening of a compressed row: the tile table's SIMD form for q8_0 and q4_0, the tensor
// module's reference for bf16 and fp8 (the same bits either way).
tensor::BlockDequantizer row_dequantizer(const AttentionTileKernels& tiles, tensor::DType type) {
  if (type == tensor::DType::Q8_0) return tiles.dequantize_q8_0;
  if (type == tensor::DType::Q4_0) return tiles.dequantize_q4_0;
  return tensor::block_dequantizer(type);
}

TileRows tile_rows(const AttentionTileKernels& tiles, const TensorView& cache, const SequenceSlice& seq,
                   int64_t first, int64_t n, int64_t offset, int64_t dim, int64_t block_size, float* staging,
                   const uint16_t** pointers) {
  TileRows rows;
  if (cache.type != tensor::DType::F16 && cache.type != tensor::DType::F32) {
    const tensor::BlockDequantizer dequantize = row_dequantizer(tiles, cache.type);
    const int64_t blocks = dim / tensor::dtype_info(cache.type).block_elements;
    for_each_row(cache, seq, first, n, kv_slice_bytes(cache.type, offset), block_size,
                 [&](int64_t j, const char* row) { dequantize(row, staging + j * dim, blocks); });
    rows.f32 = staging;
    rows.stride = dim;
    return rows;
  }
  if (cache.type == tensor::DType::F16) {
    for_each_row(cache, seq, first, n, static_cast<size_t>(offset) * sizeof(uint16_t), block_size,
                 [&](int64_t j, const char* row) { pointers[j] = reinterpret_cast<const uint16_t*>(row); });
    rows.f16 = pointers;
    return rows;
  }
  const bool one_block = first / block_size == (first + n - 1) / block_size;
  if (one_block) {
    rows.f32 = cache.row<const float>(kv_row(seq, first, block_size)) + offset;
    rows.stride = static_cast<int64_t>(cache.row_bytes / sizeof(float));
    return rows;
  }
  for_each_row(cache, seq, first, n, static_cast<size_t>(offset) * sizeof(float), block_size,
               [&](int64_t j, const char* row) {
                 std::memcpy(staging + j * dim, row, static_cast<size_t>(dim) * sizeof(float));
               });
  rows.f32 = staging;
  rows.stride = dim;
  return rows;
}

void tile_qk(const AttentionTileKernels& tiles, const float* q, int64_t nq, const TileRows& k,
             int64_t nk, int64_t dim, float* scores, int64_t ld) {
  if (k.f16 != nullptr) {
    tiles.qk_f16(q, nq, k.f16, nk, dim, scores, ld);
  } else {
    tiles.qk(q, nq, k.f32, k.stride, nk, dim, scores, ld);
  }
}

void tile_pv(const AttentionTileKernels& tiles, const float* p, int64_t nq, int64_t ld,
             const TileRows& v, int64_t nk, int64_t dim, float* acc) {
  if (v.f16 != nullptr) {
    tiles.pv_f16(p, nq, ld, v.f16, nk, dim, acc);
  } else {
    tiles.pv(p, nq, ld, v.f32, v.stride, nk, dim, acc);
  }
}

// The end of the tile that starts at `first` (a tile is at most one block for f32 rows).
int64_t tile_end_at(int64_t first, int64_t last_pos, int64_t tile, int64_t bs) {
  return tile == bs ? std::min(last_pos + 1, (first / bs + 1) * bs)
                    : std::min(last_pos + 1, first + tile);
}

// The largest value of x[0 .. n) that is not a NaN (-inf if none), as a sequential std::max
// fold from -inf gives it, but in eight independent lanes the compiler can vectorise. The fold
// and the lanes can only disagree on the sign of a zero maximum, which no x[j] - max and so no
// exp(x[j] - max) can tell apart.
float row_max(const float* x, int64_t n) {
  constexpr int kLanes = 8;
  float lanes[kLanes];
  std::fill_n(lanes, kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], x[j + l]);
  }
  for (; j < n; ++j) lanes[0] = std::max(lanes[0], x[j]);
  float max = lanes[0];
  for (int l = 1; l < kLanes; ++l) max = std::max(max, lanes[l]);
  return max;
}

// llama.cpp's default attention (no flash attention): whole score rows, softmax with the sum in
// double, probabilities rounded to f16 (the operand type of the product with an f16 V), then
// P V. Two passes over the keys instead of one; the result matches the reference's rounding.
void run_exact_f16(const AttentionJob& job, const Task& task, TaskBuffers& buf, int64_t nq,
                   int64_t first_pos, int64_t lowest, int64_t last_pos) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim, vdim = attention_value_dim(cfg), bs = cache.block_size;
  const int64_t heads = job.heads_per_task;
  const int64_t tile = tile_capacity(cache, std::max(dim, vdim));
  const int64_t span = last_pos + 1 - lowest;
  const int64_t head_offset = task.kv_head * dim, value_offset = task.kv_head * vdim;
  const bool capped = cfg.softcap != 0.0f;
  const float score_scale = capped ? cfg.scale / cfg.softcap : cfg.scale;
  const float masked = -std::numeric_limits<float>::infinity();

  for (int64_t tile_first = lowest; tile_first <= last_pos;) {
    const int64_t tile_end = tile_end_at(tile_first, last_pos, tile, bs);
    const int64_t n_keys = tile_end - tile_first;
    request_rows(cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs);
    if (!values_in_keys(cache)) {
      request_rows(cache.v, *task.seq, tile_first, n_keys, value_offset, vdim, bs);  // for the P V pass
    }
    const TileRows k = tile_rows(*job.tiles, cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs,
                                 buf.k_rows, buf.k_pointers);
    tile_qk(*job.tiles, buf.q, nq, k, n_keys, dim, buf.scores, n_keys);
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t pos = first_pos + i / heads;  // its cache position
      const int64_t lo = window_start(*task.seq, task.q_begin + i / heads, cfg.sliding_window);
      // Keys [begin, end) of the tile are visible to this query, the others masked.
      const int64_t begin = std::clamp<int64_t>(lo - tile_first, 0, n_keys);
      const int64_t end = std::max(begin, std::clamp<int64_t>(pos + 1 - tile_first, 0, n_keys));
      float* row = buf.rows + i * span + (tile_first - lowest);
      const float* s = buf.scores + i * n_keys;
      std::fill(row, row + begin, masked);
      if (capped) {
        for (int64_t j = begin; j < end; ++j) row[j] = cfg.softcap * std::tanh(s[j] * score_scale);
      } else {
        for (int64_t j = begin; j < end; ++j) row[j] = s[j] * score_scale;
      }
      std::fill(row + end, row + n_keys, masked);
      if (const uint8_t* tree = tree_row(*task.seq, task.q_begin + i / heads)) {
        for (int64_t j = begin; j < end; ++j) {
          if (hidden(*task.seq, tree, task.q_begin + i / heads, tile_first + j, cfg.sliding_window)) row[j] = masked;
        }
      }
    }
    tile_first = tile_end;
  }
  for (int64_t i = 0; i < nq; ++i) {
    float* row = buf.rows + i * span;
    const float max = row_max(row, span);
    double sum = 0.0;
    if (max == masked) {
      std::fill(row, row + span, 0.0f);  // no key visible (not reached: a query sees itself)
    } else {
      sum = job.tiles->exp_shifted_f64(row, span, max);  // masked keys: exp(-inf) = 0
    }
    const float inverse = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
    job.tiles->round_f16(row, span, inverse, row);
  }
  std::fill(buf.acc, buf.acc + nq * vdim, 0.0f);
  for (int64_t tile_first = lowest; tile_first <= last_pos;) {
    const int64_t tile_end = tile_end_at(tile_first, last_pos, tile, bs);
    const TileRows v = tile_rows(*job.tiles, cache.v, *task.seq, tile_first, tile_end - tile_first, value_offset,
                                 vdim, bs, buf.v_rows, buf.v_pointers);
    tile_pv(*job.tiles, buf.rows + (tile_first - lowest), nq, span, v, tile_end - tile_first, vdim,
            buf.acc);
    tile_first = tile_end;
  }
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    float* dst = job.out->row<float>(token * cfg.n_heads + task.head_begin + i % heads);
    std::copy_n(buf.acc + i * vdim, vdim, dst);
  }
}

void run_task(const AttentionJob& job, const Task& task, unsigned worker) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim, vdim = attention_value_dim(cfg);
  const int64_t bs = cache.block_size;
  const int64_t heads = job.heads_per_task;
  const int64_t nq = task.n_q * heads;
  const int64_t tile = tile_capacity(cache, std::max(dim, vdim));
  TaskBuffers buf = carve(job.scratch->per_worker[worker].data(),
                          job.scratch->row_pointers[worker].data(), nq, std::max(dim, vdim), tile);

  // Query vector i is query row i / heads, head head_begin + i % heads.
  const bool round_q = cache.k.type == tensor::DType::F16;
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    const float* src = job.q->row<const float>(token * cfg.n_heads + task.head_begin + i % heads);
    float* dst = buf.q + i * dim;
    if (round_q) {
      job.tiles->round_f16(src, dim, 1.0f, dst);  // x * 1 is x: only the rounding
    } else {
      std::copy_n(src, dim, dst);
    }
  }
  std::fill(buf.acc, buf.acc + nq * vdim, 0.0f);
  std::fill(buf.max, buf.max + nq, -std::numeric_limits<float>::infinity());
  std::fill(buf.sum, buf.sum + nq, 0.0f);

  const int64_t first_pos = task.seq->start_pos + task.q_begin;
  const int64_t last_pos = first_pos + task.n_q - 1;
  const int64_t window = cfg.sliding_window;
  const int64_t lowest = lowest_window_start(*task.seq, task.q_begin, task.n_q, window);
  const bool capped = cfg.softcap != 0.0f;
  const float score_scale = capped ? cfg.scale / cfg.softcap : cfg.scale;
  const int64_t head_offset = task.kv_head * dim, value_offset = task.kv_head * vdim;

  if (job.exact_f16) {
    run_exact_f16(job, task, buf, nq, first_pos, lowest, last_pos);
    return;
  }
  for (int64_t tile_first = lowest; tile_first <= last_pos;) {  // key positions of this tile
    const int64_t tile_end = tile_end_at(tile_first, last_pos, tile, bs);
    const int64_t n_keys = tile_end - tile_first;
    request_rows(cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs);
    if (!values_in_keys(cache)) request_rows(cache.v, *task.seq, tile_first, n_keys, value_offset, vdim, bs);
    const TileRows k = tile_rows(*job.tiles, cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs,
                                 buf.k_rows, buf.k_pointers);
    tile_qk(*job.tiles, buf.q, nq, k, n_keys, dim, buf.scores, n_keys);

    for (int64_t i = 0; i < nq; ++i) {
      const int64_t pos = first_pos + i / heads;  // its cache position
      const int64_t lo = window_start(*task.seq, task.q_begin + i / heads, window);
      const int64_t begin = std::clamp<int64_t>(lo - tile_first, 0, n_keys);
      const int64_t end = std::clamp<int64_t>(pos + 1 - tile_first, 0, n_keys);
      float* s = buf.scores + i * n_keys;
      if (begin >= end) {
        std::fill(s, s + n_keys, 0.0f);
        continue;
      }
      float tile_max = -std::numeric_limits<float>::infinity();
      const uint8_t* tree = tree_row(*task.seq, task.q_begin + i / heads);
      for (int64_t j = begin; j < end; ++j) {
        if (hidden(*task.seq, tree, task.q_begin + i / heads, tile_first + j, window)) {
          s[j] = -std::numeric_limits<float>::infinity();  // exp gives 0
          continue;
        }
        s[j] = capped ? cfg.softcap * std::tanh(s[j] * score_scale) : s[j] * score_scale;
        tile_max = std::max(tile_max, s[j]);
      }
      if (tile_max == -std::numeric_limits<float>::infinity()) {  // every key of the tile hidden
        std::fill(s, s + n_keys, 0.0f);
        continue;
      }
      const float new_max = std::max(buf.max[i], tile_max);
      const float correction = std::exp(buf.max[i] - new_max);  // 0 on the first tile
      std::fill(s, s + begin, 0.0f);  // masked keys get weight 0
      std::fill(s + end, s + n_keys, 0.0f);
      const float tile_sum = job.tiles->exp_shifted(s + begin, end - begin, new_max);
      buf.sum[i] = buf.sum[i] * correction + tile_sum;
      buf.max[i] = new_max;
      if (correction != 1.0f) {
        float* acc = buf.acc + i * vdim;
        for (int64_t d = 0; d < vdim; ++d) acc[d] *= correction;
      }
    }
    const TileRows v = tile_rows(*job.tiles, cache.v, *task.seq, tile_first, n_keys, value_offset, vdim, bs,
                                 buf.v_rows, buf.v_pointers);
    tile_pv(*job.tiles, buf.scores, nq, n_keys, v, n_keys, vdim, buf.acc);
    tile_first = tile_end;
  }

  for (int64_t i = 0; i < nq; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    float* dst = job.out->row<float>(token * cfg.n_heads + task.head_begin + i % heads);
    const float inv = buf.sum[i] > 0.0f ? 1.0f / buf.sum[i] : 0.0f;
    const float* acc = buf.acc + i * vdim;
    for (int64_t d = 0; d < vdim; ++d) dst[d] = acc[d] * inv;
  }
}

}  // namespace

void attention_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                    std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                    TensorView& out, ThreadPool& pool, AttentionScratch& scratch) {
  check_attention_inputs(q, cache, seqs, config, out);
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
  const int64_t width = std::max(config.head_dim, attention_value_dim(config));
  const size_t need = scratch_floats(max_q, width, tile_capacity(cache, width), job.exact_f16 ? job.longest_span : 0);
  scratch.per_worker.resize(std::max<size_t>(scratch.per_worker.size(), pool.size()));
  for (auto& buffer : scratch.per_worker) {
    if (buffer.size() < need) buffer.resize(need);
  }
  const auto pointers = static_cast<size_t>(kPointerArrays * tile_capacity(cache, width));
  scratch.row_pointers.resize(std::max<size_t>(scratch.row_pointers.size(), pool.size()));
  for (auto& buffer : scratch.row_pointers) {
    if (buffer.size() < pointers) buffer.resize(pointers);
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
