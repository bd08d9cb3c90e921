#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/attention_exact.h"
#include "backend/cpu/attention_row_masks.h"
#include "backend/cpu/attention_rows.h"
#include "backend/cpu/attention_score_columns.h"
#include "backend/cpu/attention_task.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kv_importance.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

using namespace attention_internal;  // NOLINT(google-build-using-namespace): this file's own parts

// The online softmax of an f32 or compressed V cache (the exact f16 path is attention_exact.cc).
void run_task(const AttentionJob& job, const Task& task, unsigned worker) {
  const AttentionConfig& cfg = *job.config;
  const KvLayer& cache = *job.cache;
  const int64_t dim = cfg.head_dim, vdim = attention_value_dim(cfg);
  const int64_t bs = cache.block_size;
  const int64_t heads = job.heads_per_task;
  const int64_t nq = task.n_q * heads;
  const int64_t tile = tile_capacity(cache, std::max(dim, vdim));
  TaskBuffers buf = carve(job.scratch->per_worker[worker].data(), job.scratch->row_pointers[worker].data(), nq,
                          std::max(dim, vdim), tile, job.exact_f16 ? job.longest_span : 0);
  load_queries(job, task, buf.q);
  if (job.exact_f16) {
    run_exact_task(job, task, buf);
    return;
  }
  std::fill(buf.acc, buf.acc + nq * vdim, 0.0f);
  std::fill(buf.max, buf.max + nq, -std::numeric_limits<float>::infinity());
  std::fill(buf.sum, buf.sum + nq, 0.0f);

  const int64_t last_pos = last_key(*task.seq, task.q_begin, task.n_q);  // the last key any query sees
  const int64_t window = cfg.sliding_window;
  const int64_t lowest = lowest_window_start(*task.seq, task.q_begin, task.n_q, window);
  const bool capped = cfg.softcap != 0.0f;
  const float score_scale = capped ? cfg.scale / cfg.softcap : cfg.scale;
  const int64_t head_offset = task.kv_head * dim, value_offset = task.kv_head * vdim;

  for (int64_t tile_first = lowest; tile_first <= last_pos;) {  // key positions of this tile
    const int64_t tile_end = tile_end_at(tile_first, last_pos, tile, bs);
    const int64_t n_keys = tile_end - tile_first;
    request_rows(cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs);
    if (!values_in_keys(cache)) request_rows(cache.v, *task.seq, tile_first, n_keys, value_offset, vdim, bs);
    const TileRows k = tile_rows(*job.tiles, cache.k, *task.seq, tile_first, n_keys, head_offset, dim, bs,
                                 buf.k_rows, buf.k_pointers);
    tile_qk(*job.tiles, buf.q, nq, k, n_keys, dim, buf.scores, n_keys);

    for (int64_t i = 0; i < nq; ++i) {
      const int64_t lo = window_start(*task.seq, task.q_begin + i / heads, window);
      const int64_t begin = std::clamp<int64_t>(lo - tile_first, 0, n_keys);
      const int64_t end = std::clamp<int64_t>(row_key_end(*task.seq, task.q_begin + i / heads) - tile_first, 0, n_keys);
      float* s = buf.scores + i * n_keys;
      if (begin >= end) {
        std::fill(s, s + n_keys, 0.0f);
        continue;
      }
      float tile_max = -std::numeric_limits<float>::infinity();
      const uint8_t* tree = tree_row(*task.seq, task.q_begin + i / heads);
      const float slope = common::alibi_slope(cfg.alibi_max_bias, cfg.n_heads, task.head_begin + i % heads);
      const int64_t query_pos = row_position(*task.seq, task.q_begin + i / heads);
      for (int64_t j = begin; j < end; ++j) {
        if (hidden(*task.seq, tree, task.q_begin + i / heads, tile_first + j, window)) {
          s[j] = -std::numeric_limits<float>::infinity();  // exp gives 0
          continue;
        }
        s[j] = capped ? cfg.softcap * std::tanh(s[j] * score_scale) : s[j] * score_scale;
        if (slope != 0.0f) s[j] += slope * common::alibi_distance(query_pos, key_position(*task.seq, tile_first + j));
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
    const float inv = online_output_scale(buf.max[i], buf.sum[i], sink_logit(cfg, task.head_begin + i % heads));
    const float* acc = buf.acc + i * vdim;
    for (int64_t d = 0; d < vdim; ++d) dst[d] = acc[d] * inv;
  }
}

}  // namespace

void attention_scored_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                           std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                           std::span<const AttentionScoreTarget> targets, TensorView& out, ThreadPool& pool,
                           AttentionScratch& scratch) {
  check_attention_inputs(q, cache, seqs, config, out);
  AttentionJob job{&tiles, &q, &cache, seqs, &config, &out, &scratch, 0, 0, 0, false, 0};
  job.exact_f16 = cache.v.type == tensor::DType::F16;
  job.group = config.n_heads / config.n_kv_heads;
  if (!targets.empty() && !job.exact_f16) {  // no probabilities held: the separate pass
    attention_scored_with(tiles, q, cache, seqs, config, {}, out, pool, scratch);
    for (const AttentionScoreTarget& t : targets) {
      attention_scores_with(tiles, q, cache, seqs[t.sequence], t.first_row, config, t.scores, t.slot_stride, pool);
    }
    return;
  }
  const bool scored = !targets.empty();

  int64_t longest = 0;
  for (const SequenceSlice& seq : seqs) {
    longest = std::max(longest, seq.n_tokens);
    job.longest_span = std::max(job.longest_span, seq.start_pos + seq.n_tokens);
  }
  // Process a whole group of query heads together unless that leaves too few tasks to keep
  // every thread busy (decode of one sequence): then spread the exact path's keys over the
  // threads if they span several chunks, else split the group, but only until every thread has
  // a task: each part of a split group reads the head's K/V rows again and pays a task's fixed
  // cost, which at a short context is most of it (SmolLM2, one sequence, 2 threads, attention
  // per decode step, alternated: context 128, 3 whole-group tasks 0.25-0.38 ms against 9
  // one-head tasks 0.32-0.54 ms in 7 of 7 pairs; context 250, 0.44-0.63 against 0.61-0.69).
  const int64_t wanted_tasks = 2 * static_cast<int64_t>(pool.size());
  const auto threads = static_cast<int64_t>(pool.size());
  auto tasks_with = [&](int64_t heads_per_task) {
    job.heads_per_task = heads_per_task;
    job.chunk = std::clamp<int64_t>(kMaxQueryVectorsPerTask / heads_per_task, 1, kMaxQueryVectorsPerTask);
    int64_t chunks = 0;
    for (const SequenceSlice& seq : seqs) chunks += ceil_div(seq.n_tokens, job.chunk);
    return chunks * config.n_kv_heads * (job.group / heads_per_task);
  };
  int64_t n_tasks = tasks_with(job.group);
  if (n_tasks == 0) return;
  const bool split_keys = job.exact_f16 && n_tasks < wanted_tasks && spans_several_chunks(job, n_tasks);
  // Scores need whole groups (attention_score_columns.h: their sums must not depend on threads).
  while (!scored && !split_keys && job.heads_per_task > 1 && n_tasks < threads) {
    int64_t smaller = job.heads_per_task - 1;
    while (job.group % smaller != 0) --smaller;
    n_tasks = tasks_with(smaller);
  }

  const int64_t max_q = std::min(job.chunk, longest) * job.heads_per_task;
  const int64_t width = std::max(config.head_dim, attention_value_dim(config));
  const bool whole_rows = job.exact_f16 && !split_keys;  // rows per worker, not per job
  const size_t need = scratch_floats(max_q, width, tile_capacity(cache, width), whole_rows ? job.longest_span : 0);
  scratch.per_worker.resize(std::max<size_t>(scratch.per_worker.size(), pool.size()));
  for (auto& buffer : scratch.per_worker) {
    if (buffer.size() < need) buffer.resize(need);
  }
  const auto pointers = static_cast<size_t>(kPointerArrays * tile_capacity(cache, width));
  scratch.row_pointers.resize(std::max<size_t>(scratch.row_pointers.size(), pool.size()));
  for (auto& buffer : scratch.row_pointers) {
    if (buffer.size() < pointers) buffer.resize(pointers);
  }
  if (scored) {
    plan_score_columns(job, n_tasks, targets, scratch.score_columns);
    job.score_columns = &scratch.score_columns;
  }
  if (split_keys) {
    run_exact_split(job, n_tasks, pool);
  } else {
    const AttentionJob* shared = &job;
    pool.parallel_for(n_tasks,
                      [shared](int64_t index, unsigned worker) { run_task(*shared, task_at(*shared, index), worker); });
  }
  if (scored) add_columns_to_tables(job, targets, pool);
}

void attention_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                    std::span<const SequenceSlice> seqs, const AttentionConfig& config, TensorView& out,
                    ThreadPool& pool, AttentionScratch& scratch) {
  attention_scored_with(tiles, q, cache, seqs, config, {}, out, pool, scratch);
}

void attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
               const AttentionConfig& config, TensorView& out, ThreadPool& pool,
               AttentionScratch& scratch) {
  attention_with(best_attention_tiles(), q, cache, seqs, config, out, pool, scratch);
}

void attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                      const AttentionConfig& config, std::span<const AttentionScoreTarget> targets, TensorView& out,
                      ThreadPool& pool, AttentionScratch& scratch) {
  attention_scored_with(best_attention_tiles(), q, cache, seqs, config, targets, out, pool, scratch);
}

}  // namespace lumen::backend::cpu
