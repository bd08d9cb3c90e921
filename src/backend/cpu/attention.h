#pragma once
// Causal self-attention over the paged K/V cache (flash-attention style for an f32 cache):
// keys are visited tile by tile straight from the cache (no gathered copy of a sequence's K/V;
// f16 rows are widened in registers by the dot products), scores go through an online softmax
// (running max and sum, accumulator rescaled when the max grows), and the weighted values are
// accumulated in f32.
//
// Numerics, compared with ggml's CPU attention (both its flash-attention and its
// mul_mat/softmax path):
//  - with an f16 K cache, ggml rounds each query to f16 before q.k (the dot product's operand
//    type); we do the same, then multiply exactly (f16 x f16 fits in f32) and sum in f32;
//  - the score is dot * scale, or with a softcap c: c * tanh(dot * (scale / c)), as ggml does;
//  - softmax exponentials use expf (portable) or an 8-lane polynomial within ~2 ulp of it
//    (AVX2; ggml's SIMD softmax has its own polynomial too);
//  - with an f32 V cache, probabilities and the V accumulator stay f32 (one online pass);
//  - with an f16 V cache, the default, we reproduce llama.cpp's default (non-flash) path
//    exactly: whole score rows, softmax with the sum in double, probabilities rounded to f16
//    (the operand type of its P V product), then P V. That costs a second pass over the keys
//    and keeps Lumen's logits within rounding of the reference's. Its exponentials are expf
//    (portable) or, vectorized, computed in double and rounded once (exp_f64_avx2.h: expf's
//    bits on all but a few in 10^4 values, 1 ulp on those), since exp_avx2's 2 ulp, through
//    the f16 rounding, moved greedy outputs against llama.cpp's.
//
// Query j of a sequence (position p = start_pos + j) sees cached positions [lo, p] with
// lo = 0, or lo = max(0, p - sliding_window + 1) with a window (llama.cpp's standard SWA: key
// p0 is masked when p - p0 >= window). A tree-masked slice's rows count their window from
// their own positions (SequenceSlice::positions), keys of the slice by theirs. Query head h reads KV head h / (n_heads / n_kv_heads).
// Values may be narrower than keys (AttentionConfig::value_dim) and a view of the keys' memory
// (multi-head latent attention: one latent row per position, its leading part the value); the
// output then has value_dim per head.
//
// Work is split over (sequence, query chunk, KV head, group of query heads) tasks on the pool;
// the query heads that share a KV head are processed together so each K/V row is read once per
// chunk. When that gives too few tasks to occupy the threads (a decode step or a speculative
// verification of one sequence), the exact f16 path spreads each task's keys over the pool in
// chunks instead (attention_exact.h), rather than splitting the group of query heads, which
// would read every K/V row once per head. A task walks its sequence's block table itself and
// requests each tile's cache lines one tile ahead (the rows are scattered, so the hardware
// prefetcher cannot). Scratch memory grows only when a larger shape is seen.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/common/attention_checks.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {

struct AttentionTileKernels;

// attention_scored's columns of scores, one per scored task (attention_score_columns.h).
struct AttentionScoreColumns {
  struct Column {
    int64_t task;   // the task that fills it
    size_t target;  // the index of its target
    int64_t kv_head;
    int64_t offset;     // where it starts in `floats`
    int64_t first_key;  // the position of its first entry
    int64_t n_keys;
    int64_t first_row;  // the task's first scored row (within the sequence)
  };
  std::vector<Column> columns;          // in task order
  std::vector<int64_t> column_of_task;  // per task index: its column, or -1
  std::vector<float> floats;
};

struct AttentionScratch {
  std::vector<std::vector<float>> per_worker;
  std::vector<std::vector<const uint16_t*>> row_pointers;  // per worker: a K and a V tile's f16 rows
  // The exact f16 path spread over key chunks (attention_exact.h): what its passes hand on.
  std::vector<float> split_floats;  // score rows, then each chunk's P V
  std::vector<float> split_max;     // per chunk and query: the max score
  std::vector<double> split_sums;   // per chunk and query: the sum of exponentials
  std::vector<int64_t> split_plan;  // per task: where its chunks and arrays start
  std::vector<int64_t> split_bounds;  // per part of the threads: its first chunk task
  AttentionScoreColumns score_columns;
};

// q and out: f32 {head_dim, n_heads, n_tokens} (out may not alias q). The cache already holds
// this batch's keys and values. Throws lumen::Error on inconsistent shapes, configs or block
// tables. Rows of out that belong to no sequence are left untouched.
void attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
               const AttentionConfig& config, TensorView& out, ThreadPool& pool,
               AttentionScratch& scratch);

// The same with the inner loops of a given instruction set (tests run every one).
void attention_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                    std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                    TensorView& out, ThreadPool& pool, AttentionScratch& scratch);

// attention, and for each target the scores Backend::attention_scored describes (below).
void attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                      const AttentionConfig& config, std::span<const AttentionScoreTarget> targets, TensorView& out,
                      ThreadPool& pool, AttentionScratch& scratch);

// attention_with, and for each target the scores Backend::attention_scored describes: on an f16
// V cache (the exact path) from the attention's own probabilities (attention_score_columns.h),
// otherwise attention_scores_with's separate pass after the attention.
void attention_scored_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                           std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                           std::span<const AttentionScoreTarget> targets, TensorView& out, ThreadPool& pool,
                           AttentionScratch& scratch);

// The argument check every backend shares (backend/common/attention_checks.h).
using common::check_attention_inputs;

}  // namespace lumen::backend::cpu
