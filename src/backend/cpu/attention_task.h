#pragma once
// Internal to the CPU attention: how a call is cut into tasks (a chunk of one sequence's query
// rows, one KV head, some of its query heads), what every task shares, and each worker's
// scratch carved into the arrays a task uses.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include "backend/backend.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"

namespace lumen::backend::cpu::attention_internal {

constexpr int64_t kMaxQueryVectorsPerTask = 64;  // query rows x heads sharing one K/V pass
// Keys per tile. Once a cache has f16 rows, a tile may span blocks (f16 rows are read through
// per-key pointers, f32 ones copied into a staging tile) and the per-tile softmax bookkeeping is
// amortised over more keys; a tile of f32 rows stays within 16 KB so K and V together fit in
// L1. Tile extents shape the online softmax's rounding, so they stay as they were when every
// f16 row went through an f32 staging tile. With f32 rows only, rows are read in place, so a
// tile is at most one block.
constexpr int64_t kStagingTileFloats = 4096;
constexpr int64_t kMaxTileKeys = 64;

inline int64_t tile_capacity(const KvLayer& cache, int64_t dim) {
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
  // attention_scored on the exact path: where each task adds its rows' probabilities
  // (attention_score_columns.h); null otherwise.
  AttentionScoreColumns* score_columns = nullptr;
};

// One task: a chunk of one sequence's queries, one KV head, some of its query heads.
struct Task {
  const SequenceSlice* seq;
  int64_t q_begin;  // first query row within the sequence
  int64_t n_q;
  int64_t kv_head;
  int64_t head_begin;  // first query head
  int64_t index;       // its index among the job's tasks (task_at)
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline Task task_at(const AttentionJob& job, int64_t index) {
  const int64_t subgroups = job.group / job.heads_per_task;
  const int64_t per_chunk = job.config->n_kv_heads * subgroups;
  int64_t chunk_index = index / per_chunk;
  const int64_t within = index % per_chunk;
  for (const SequenceSlice& seq : job.seqs) {
    const int64_t chunks = ceil_div(seq.n_tokens, job.chunk);
    if (chunk_index < chunks) {
      Task task{&seq, chunk_index * job.chunk, 0, within / subgroups, 0, index};
      task.n_q = std::min(job.chunk, seq.n_tokens - task.q_begin);
      task.head_begin = task.kv_head * job.group + (within % subgroups) * job.heads_per_task;
      return task;
    }
    chunk_index -= chunks;
  }
  return Task{nullptr, 0, 0, 0, 0, index};  // unreachable: index < task count
}

// The exact f16 path (attention_exact.h) cuts each query's keys into chunks of this many
// positions, counted from position 0 of the sequence: its arithmetic is defined chunk by chunk
// (a partial sum of exponentials and a partial P V per chunk, added in chunk order), so a
// query's result does not depend on how its keys are spread over tasks, nor on which other
// queries share its task. 256 keys: a decode step at a few hundred tokens of context still
// gives every thread a chunk, and one chunk's scores of a task stay in L1.
constexpr int64_t kKeyChunk = 256;

// Key chunks a span of `span` keys starting anywhere can touch.
inline int64_t chunks_in_span(int64_t span) { return span / kKeyChunk + 2; }

// Per-worker scratch, carved into the arrays a task uses.
struct TaskBuffers {
  float* q;       // nq x dim, the (possibly f16-rounded) queries
  float* acc;     // nq x dim
  float* max;     // nq
  float* sum;     // nq
  float* scores;  // nq x tile
  float* k_rows;  // tile x dim, f32 keys copied from several blocks
  float* v_rows;  // tile x dim
  // The exact f16 path only (span > 0 when carved):
  float* rows;                  // nq x span, whole score rows
  float* partial;               // nq x dim, one key chunk's P V
  float* chunk_max;             // chunks x nq
  double* chunk_sum;            // chunks x nq
  const uint16_t** k_pointers;  // tile, f16 key rows
  const uint16_t** v_pointers;  // tile, f16 value rows
};

constexpr int64_t kPointerArrays = 2;

inline size_t rounded(size_t n) { return (n + 15) & ~size_t{15}; }

// dim: the wider of a key and a value row (the accumulators and staging tiles hold either).
// span: the most keys a query sees when the exact path's whole score rows are needed, else 0.
inline size_t scratch_floats(int64_t nq, int64_t dim, int64_t tile, int64_t span) {
  const auto q = static_cast<size_t>(nq), d = static_cast<size_t>(dim), b = static_cast<size_t>(tile);
  size_t floats = 2 * rounded(q * d) + 2 * rounded(q) + rounded(q * b) + 2 * rounded(b * d);
  if (span > 0) {
    const auto chunks = static_cast<size_t>(chunks_in_span(span));
    floats += rounded(q * static_cast<size_t>(span)) + rounded(q * d) + 3 * rounded(q * chunks);
  }
  return floats;
}

inline TaskBuffers carve(float* base, const uint16_t** pointers, int64_t nq, int64_t dim, int64_t tile, int64_t span) {
  const auto q = static_cast<size_t>(nq), d = static_cast<size_t>(dim), b = static_cast<size_t>(tile);
  TaskBuffers t{};
  t.q = base;
  t.acc = t.q + rounded(q * d);
  t.max = t.acc + rounded(q * d);
  t.sum = t.max + rounded(q);
  t.scores = t.sum + rounded(q);
  t.k_rows = t.scores + rounded(q * b);
  t.v_rows = t.k_rows + rounded(b * d);
  if (span > 0) {
    const auto chunks = static_cast<size_t>(chunks_in_span(span));
    t.rows = t.v_rows + rounded(b * d);
    t.partial = t.rows + rounded(q * static_cast<size_t>(span));
    t.chunk_max = t.partial + rounded(q * d);
    // Every offset is a whole number of 16 floats, so the sums are aligned for doubles.
    t.chunk_sum = reinterpret_cast<double*>(t.chunk_max + rounded(q * chunks));
  }
  t.k_pointers = pointers;
  t.v_pointers = pointers + tile;
  return t;
}

// Query vector i of a task (row i / heads_per_task, head head_begin + i % heads_per_task) into
// q (nq x head_dim), rounded to f16 when the keys are f16 (see attention.h).
inline void load_queries(const AttentionJob& job, const Task& task, float* q) {
  const AttentionConfig& cfg = *job.config;
  const int64_t heads = job.heads_per_task, dim = cfg.head_dim;
  const bool round_q = job.cache->k.type == tensor::DType::F16;
  for (int64_t i = 0; i < task.n_q * heads; ++i) {
    const int64_t token = task.seq->first_token + task.q_begin + i / heads;
    const float* src = job.q->row<const float>(token * cfg.n_heads + task.head_begin + i % heads);
    float* dst = q + i * dim;
    if (round_q) {
      job.tiles->round_f16(src, dim, 1.0f, dst);  // x * 1 is x: only the rounding
    } else {
      std::copy_n(src, dim, dst);
    }
  }
}

}  // namespace lumen::backend::cpu::attention_internal
