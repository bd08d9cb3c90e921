#include "backend/cpu/attention_exact.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/attention_row_masks.h"
#include "backend/cpu/attention_rows.h"
#include "backend/cpu/attention_score_columns.h"

namespace lumen::backend::cpu::attention_internal {

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// The keys a task's queries see: positions [lowest, last_pos] (span of them; past the last
// query's own position in a span that attends both ways), which lie in key
// chunks first_chunk .. first_chunk + n_chunks - 1.
struct KeyRange {
  int64_t lowest;
  int64_t last_pos;
  int64_t span;
  int64_t first_chunk;
  int64_t n_chunks;
};

KeyRange key_range(const AttentionJob& job, const Task& task) {
  KeyRange r{};
  r.last_pos = last_key(*task.seq, task.q_begin, task.n_q);
  r.lowest = lowest_window_start(*task.seq, task.q_begin, task.n_q, job.config->sliding_window);
  r.span = r.last_pos + 1 - r.lowest;
  r.first_chunk = r.lowest / kKeyChunk;
  r.n_chunks = r.last_pos / kKeyChunk - r.first_chunk + 1;
  return r;
}

// Keys [begin, end) of the range's chunk c (counted from the range's first chunk).
struct Piece {
  int64_t begin;
  int64_t end;
};

Piece piece_of(const KeyRange& r, int64_t c) {
  const int64_t chunk = r.first_chunk + c;
  return {std::max(chunk * kKeyChunk, r.lowest), std::min((chunk + 1) * kKeyChunk, r.last_pos + 1)};
}

// What a task's chunks hand to each other.
struct ChunkState {
  float* rows;        // nq x span: scores, then exponentials, then f16-rounded probabilities
  float* chunk_max;   // n_chunks x nq
  double* chunk_sum;  // n_chunks x nq
};

int64_t query_vectors(const AttentionJob& job, const Task& task) { return task.n_q * job.heads_per_task; }

// Pass 1: chunk c's scores for every query of the task (scaled, soft-capped, masked keys -inf)
// into the rows, and each query's max over the chunk. Only the keys are requested here: the
// values, requested with them as the online path does, were read only in pass 3 (often on the
// other core), and their misses slowed the keys'. Requested tile by tile in pass 3 instead,
// attention took 28 instead of 33 ms of a 32-stream decode step at context 512, and 2.4-3.1
// instead of 3.1-4.6 ms of a one-sequence step at 1500 (`lumen bench profile`, alternated 3x).
void score_chunk(const AttentionJob& job, const Task& task, const KeyRange& r, int64_t c, TaskBuffers& buf,
                 const ChunkState& state) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim, vdim = attention_value_dim(cfg), bs = cache.block_size;
  const int64_t heads = job.heads_per_task, nq = query_vectors(job, task);
  const int64_t tile = tile_capacity(cache, std::max(dim, vdim));
  const int64_t head_offset = task.kv_head * dim;
  const bool capped = cfg.softcap != 0.0f;
  const float score_scale = capped ? cfg.scale / cfg.softcap : cfg.scale;
  const Piece piece = piece_of(r, c);

  for (int64_t tile_first = piece.begin; tile_first < piece.end;) {
    const int64_t tile_end = tile_end_at(tile_first, piece.end - 1, tile, bs);
    const int64_t n_keys = tile_end - tile_first;
    request_rows(cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs);
    const TileRows k =
        tile_rows(*job.tiles, cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs, buf.k_rows, buf.k_pointers);
    tile_qk(*job.tiles, buf.q, nq, k, n_keys, dim, buf.scores, n_keys);
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t row_index = task.q_begin + i / heads;
      const int64_t lo = window_start(*task.seq, row_index, cfg.sliding_window);
      // Keys [begin, end) of the tile are visible to this query, the others masked.
      const int64_t begin = std::clamp<int64_t>(lo - tile_first, 0, n_keys);
      const int64_t end =
          std::max(begin, std::clamp<int64_t>(row_key_end(*task.seq, row_index) - tile_first, 0, n_keys));
      float* row = state.rows + i * r.span + (tile_first - r.lowest);
      const float* s = buf.scores + i * n_keys;
      std::fill(row, row + begin, kMasked);
      if (capped) {
        for (int64_t j = begin; j < end; ++j) row[j] = cfg.softcap * std::tanh(s[j] * score_scale);
      } else {
        job.tiles->scale(s + begin, end - begin, score_scale, row + begin);
      }
      // After the scale (and cap), as ggml's soft_max adds slope x mask to the scaled scores.
      add_alibi(*task.seq, row_index, common::alibi_slope(cfg.alibi_max_bias, cfg.n_heads, task.head_begin + i % heads),
                tile_first, begin, end, row);
      std::fill(row + end, row + n_keys, kMasked);
      if (const uint8_t* tree = tree_row(*task.seq, row_index)) {
        for (int64_t j = begin; j < end; ++j) {
          if (hidden(*task.seq, tree, row_index, tile_first + j, cfg.sliding_window)) row[j] = kMasked;
        }
      }
    }
    tile_first = tile_end;
  }
  for (int64_t i = 0; i < nq; ++i) {
    state.chunk_max[c * nq + i] =
        job.tiles->max(state.rows + i * r.span + (piece.begin - r.lowest), piece.end - piece.begin);
  }
}

// Query vector i's max over all its chunks, and over its head's sink (as ggml's soft_max counts
// the sink in the row's max).
float row_max(const AttentionJob& job, const Task& task, const KeyRange& r, const ChunkState& state, int64_t i) {
  const int64_t nq = query_vectors(job, task);
  float max = sink_logit(*job.config, task.head_begin + i % job.heads_per_task);
  for (int64_t other = 0; other < r.n_chunks; ++other) max = std::max(max, state.chunk_max[other * nq + i]);
  return max;
}

// Pass 2: chunk c's exponentials, shifted by each query's max over all its chunks, and their
// sum (in double) per query.
void exponentiate_chunk(const AttentionJob& job, const Task& task, const KeyRange& r, int64_t c,
                        const ChunkState& state) {
  const int64_t nq = query_vectors(job, task);
  const Piece piece = piece_of(r, c);
  for (int64_t i = 0; i < nq; ++i) {
    const float max = row_max(job, task, r, state, i);
    float* row = state.rows + i * r.span + (piece.begin - r.lowest);
    double sum = 0.0;
    if (max == kMasked) {
      std::fill(row, row + (piece.end - piece.begin), 0.0f);  // no key visible (not reached: a query sees itself)
    } else {
      sum = job.tiles->exp_shifted_f64(row, piece.end - piece.begin, max);  // masked keys: exp(-inf) = 0
    }
    state.chunk_sum[c * nq + i] = sum;
  }
}

// Pass 3: chunk c's probabilities (exponentials over the sum of every chunk's, rounded to f16)
// and their P V from zero into `partial` (nq x value dim).
void weigh_chunk(const AttentionJob& job, const Task& task, const KeyRange& r, int64_t c, TaskBuffers& buf,
                 const ChunkState& state, float* partial) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim, vdim = attention_value_dim(cfg), bs = cache.block_size;
  const int64_t nq = query_vectors(job, task);
  const int64_t tile = tile_capacity(cache, std::max(dim, vdim));
  const int64_t value_offset = task.kv_head * vdim;
  const Piece piece = piece_of(r, c);
  for (int64_t i = 0; i < nq; ++i) {
    double sum = 0.0;
    for (int64_t other = 0; other < r.n_chunks; ++other) sum += state.chunk_sum[other * nq + i];
    // A sink adds its exponential to the sum (in f32, then double, as ggml adds it) and no value.
    const float sink = sink_logit(cfg, task.head_begin + i % job.heads_per_task);
    if (sink != kMasked) sum += static_cast<double>(std::exp(sink - row_max(job, task, r, state, i)));
    const float inverse = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
    float* row = state.rows + i * r.span + (piece.begin - r.lowest);
    job.tiles->round_f16(row, piece.end - piece.begin, inverse, row);
  }
  std::fill(partial, partial + nq * vdim, 0.0f);
  for (int64_t tile_first = piece.begin; tile_first < piece.end;) {
    const int64_t tile_end = tile_end_at(tile_first, piece.end - 1, tile, bs);
    if (!values_in_keys(cache))
      request_rows(cache.v, *task.seq, tile_first, tile_end - tile_first, value_offset, vdim, bs);
    const TileRows v = tile_rows(*job.tiles, cache.v, *task.seq, tile_first, tile_end - tile_first, value_offset, vdim,
                                 bs, buf.v_rows, buf.v_pointers);
    tile_pv(*job.tiles, state.rows + (tile_first - r.lowest), nq, r.span, v, tile_end - tile_first, vdim, partial);
    tile_first = tile_end;
  }
}

// Query vector i's output row: the task's chunk results added in chunk order.
template <typename ChunkResult>
void write_task_output(const AttentionJob& job, const Task& task, int64_t n_chunks, ChunkResult&& chunk_result) {
  const AttentionConfig& cfg = *job.config;
  const int64_t vdim = attention_value_dim(cfg), heads = job.heads_per_task;
  for (int64_t i = 0; i < query_vectors(job, task); ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    float* dst = job.out->row<float>(token * cfg.n_heads + task.head_begin + i % heads);
    std::copy_n(chunk_result(0) + i * vdim, vdim, dst);
    for (int64_t c = 1; c < n_chunks; ++c) {
      const float* add = chunk_result(c) + i * vdim;
      for (int64_t d = 0; d < vdim; ++d) dst[d] += add[d];
    }
  }
}

// The split's bookkeeping, per task of the job: where its chunk tasks start in a pass, and
// where its rows, chunk statistics and chunk results lie in the job's scratch.
struct SplitTask {
  int64_t first_chunk_task;
  size_t rows;
  size_t stats;
  size_t results;
};

constexpr size_t kSplitFields = 4;

SplitTask split_task(const std::vector<int64_t>& plan, int64_t t) {
  const auto* f = plan.data() + static_cast<size_t>(t) * kSplitFields;
  return {f[0], static_cast<size_t>(f[1]), static_cast<size_t>(f[2]), static_cast<size_t>(f[3])};
}

// Splits the chunk tasks (in order) into `parts` runs of about equal key counts: bounds[p] is
// part p's first chunk task, bounds[parts] = chunk_tasks. A chunk's scores, written by one
// core in the first pass, are then read and rewritten from that core's cache in the next two
// instead of crossing to whichever core the pool's dynamic hand-out gave the chunk there (one
// sequence, 6 rows at context 900, SmolLM2: attention 4.0-4.2 against 4.45-4.6 ms per step,
// alternated 4 times). The pool gives part p to the same worker in every pass in the common
// case; when it does not, only locality suffers.
void part_bounds(const AttentionJob& job, int64_t n_tasks, int64_t chunk_tasks, int64_t parts,
                 std::vector<int64_t>& bounds) {
  bounds.assign(static_cast<size_t>(parts) + 1, chunk_tasks);
  bounds[0] = 0;
  int64_t total = 0;
  for (int64_t t = 0; t < n_tasks; ++t) total += key_range(job, task_at(job, t)).span;
  int64_t index = 0, keys = 0, part = 1;
  for (int64_t t = 0; t < n_tasks && part < parts; ++t) {
    const KeyRange r = key_range(job, task_at(job, t));
    for (int64_t c = 0; c < r.n_chunks && part < parts; ++c, ++index) {
      const Piece piece = piece_of(r, c);
      keys += piece.end - piece.begin;
      if (keys * parts >= total * part) bounds[static_cast<size_t>(part++)] = index + 1;
    }
  }
}

}  // namespace

void run_exact_task(const AttentionJob& job, const Task& task, TaskBuffers& buf) {
  const KeyRange r = key_range(job, task);
  const ChunkState state{buf.rows, buf.chunk_max, buf.chunk_sum};
  const int64_t nq = query_vectors(job, task), vdim = attention_value_dim(*job.config);
  for (int64_t c = 0; c < r.n_chunks; ++c) score_chunk(job, task, r, c, buf, state);
  for (int64_t c = 0; c < r.n_chunks; ++c) exponentiate_chunk(job, task, r, c, state);
  // acc holds chunk 0's result, then the sum of the chunks so far (write_task_output's order).
  for (int64_t c = 0; c < r.n_chunks; ++c) {
    weigh_chunk(job, task, r, c, buf, state, c == 0 ? buf.acc : buf.partial);
    if (c > 0) {
      for (int64_t e = 0; e < nq * vdim; ++e) buf.acc[e] += buf.partial[e];
    }
  }
  write_task_output(job, task, 1, [&](int64_t) { return buf.acc; });
  add_task_scores(job, task, buf.rows, r.lowest, r.span);
}

bool spans_several_chunks(const AttentionJob& job, int64_t n_tasks) {
  for (int64_t t = 0; t < n_tasks; ++t) {
    if (key_range(job, task_at(job, t)).n_chunks > 1) return true;
  }
  return false;
}

void run_exact_split(const AttentionJob& job, int64_t n_tasks, ThreadPool& pool) {
  AttentionScratch& scratch = *job.scratch;
  const int64_t vdim = attention_value_dim(*job.config);
  std::vector<int64_t>& plan = scratch.split_plan;
  plan.resize(static_cast<size_t>(n_tasks) * kSplitFields);
  int64_t chunk_tasks = 0;
  size_t rows = 0, stats = 0;
  for (int64_t t = 0; t < n_tasks; ++t) {
    const Task task = task_at(job, t);
    const KeyRange r = key_range(job, task);
    const auto nq = static_cast<size_t>(query_vectors(job, task));
    auto* f = plan.data() + static_cast<size_t>(t) * kSplitFields;
    f[0] = chunk_tasks;
    f[1] = static_cast<int64_t>(rows);
    f[2] = static_cast<int64_t>(stats);
    chunk_tasks += r.n_chunks;
    rows += rounded(nq * static_cast<size_t>(r.span));
    stats += rounded(nq * static_cast<size_t>(r.n_chunks));
  }
  size_t results = rows;  // the chunk results follow the rows
  for (int64_t t = 0; t < n_tasks; ++t) {
    const Task task = task_at(job, t);
    plan[static_cast<size_t>(t) * kSplitFields + 3] = static_cast<int64_t>(results);
    results += rounded(static_cast<size_t>(key_range(job, task).n_chunks * query_vectors(job, task) * vdim));
  }
  if (scratch.split_floats.size() < results) scratch.split_floats.resize(results);
  if (scratch.split_max.size() < stats) scratch.split_max.resize(stats);
  if (scratch.split_sums.size() < stats) scratch.split_sums.resize(stats);

  // Chunk task `index` of a pass: its task, key range, chunk and shared state.
  struct Located {
    Task task;
    KeyRange range;
    int64_t chunk;
    SplitTask split;
    ChunkState state;
  };
  auto locate = [&](int64_t index) {
    int64_t lo = 0, hi = n_tasks - 1;  // the last task whose first chunk task is <= index
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (split_task(plan, mid).first_chunk_task <= index)
        lo = mid;
      else
        hi = mid - 1;
    }
    Located at{task_at(job, lo), {}, 0, split_task(plan, lo), {}};
    at.range = key_range(job, at.task);
    at.chunk = index - at.split.first_chunk_task;
    at.state = {scratch.split_floats.data() + at.split.rows, scratch.split_max.data() + at.split.stats,
                scratch.split_sums.data() + at.split.stats};
    return at;
  };
  auto chunk_result = [&](const Located& at, int64_t c) {
    return scratch.split_floats.data() + at.split.results + static_cast<size_t>(c * query_vectors(job, at.task) * vdim);
  };
  auto buffers = [&](unsigned worker, const Task& task) {
    const int64_t width = std::max(job.config->head_dim, vdim);
    return carve(scratch.per_worker[worker].data(), scratch.row_pointers[worker].data(), query_vectors(job, task),
                 width, tile_capacity(*job.cache, width), 0);
  };

  // Each pass hands the same runs of chunk tasks to the same parts of the pool (see
  // part_bounds), so a chunk's rows stay in one core's cache through the three passes.
  std::vector<int64_t>& bounds = scratch.split_bounds;
  const auto parts = std::min<int64_t>(static_cast<int64_t>(pool.size()), chunk_tasks);
  part_bounds(job, n_tasks, chunk_tasks, parts, bounds);
  auto for_each_chunk_task = [&](auto&& fn) {
    pool.parallel_for(parts, [&](int64_t part, unsigned worker) {
      for (int64_t index = bounds[static_cast<size_t>(part)]; index < bounds[static_cast<size_t>(part) + 1]; ++index) {
        fn(index, worker);
      }
    });
  };
  for_each_chunk_task([&](int64_t index, unsigned worker) {
    const Located at = locate(index);
    TaskBuffers buf = buffers(worker, at.task);
    load_queries(job, at.task, buf.q);
    score_chunk(job, at.task, at.range, at.chunk, buf, at.state);
  });
  for_each_chunk_task([&](int64_t index, unsigned) {
    const Located at = locate(index);
    exponentiate_chunk(job, at.task, at.range, at.chunk, at.state);
  });
  for_each_chunk_task([&](int64_t index, unsigned worker) {
    const Located at = locate(index);
    TaskBuffers buf = buffers(worker, at.task);
    weigh_chunk(job, at.task, at.range, at.chunk, buf, at.state, chunk_result(at, at.chunk));
  });
  // Here, not in a pass of its own: the split serves few tasks (a decode step), whose scores are
  // a few thousand additions, less than what another wait for the pool costs.
  for (int64_t t = 0; t < n_tasks; ++t) {
    const Located at = locate(split_task(plan, t).first_chunk_task);
    write_task_output(job, at.task, at.range.n_chunks, [&](int64_t c) { return chunk_result(at, c); });
    add_task_scores(job, at.task, at.state.rows, at.range.lowest, at.range.span);  // rows: every chunk's
  }
}

}  // namespace lumen::backend::cpu::attention_internal
