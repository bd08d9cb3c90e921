// Dispatch and threading of the CPU matmul: each call's targets become parts (matmul_parts.h:
// their kernels, quantized activations and tasks), run over the thread pool.
//
// Every call runs through the same planner: matmul is matmul_same_input with one weight, and
// matmul_glu splits its two weights in common row chunks so a task can apply the activation.
//
// Decode-shaped calls (a few tokens) do not use fixed tasks: their rows, in units of 16, go
// through a RangeSplit (util/range_split.h), so each worker streams one contiguous run of
// weights and a faster worker takes the slower one's last units instead of waiting for them.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <array>

#include "backend/cpu/matmul_parts.h"
#include "util/error.h"
#include "util/range_split.h"

namespace lumen::backend::cpu {
namespace {

using detail::kMaxTileTokens;
using detail::kTileRows;
using matmul_internal::decode_task_rows;
using matmul_internal::kPrefillTaskRows;
using matmul_internal::kTaskTokens;
using matmul_internal::Part;
using matmul_internal::prepare_parts;
using matmul_internal::run_packed_task;
using matmul_internal::run_part_rows;
using matmul_internal::run_task;

// matmul_glu's split: a task is the same rows of both products for some tokens, then the
// activation of those rows: chunks of whole 16-row groups, so the activation's SIMD split (8
// lanes) and its tail fall where the standalone op puts them, and the result is bit-identical
// to it.
struct GluPlan {
  const Part* parts = nullptr;
  GluRowFn glu = nullptr;
  MatmulTarget gate, up;
  int64_t rows = 0, n_tokens = 0, chunk_rows = 0, chunk_tokens = 0, row_chunks = 0, n_tasks = 0;
};

GluPlan plan_glu(const Part* parts, GluRowFn glu, const MatmulTarget& gate, const MatmulTarget& up, int64_t n_tokens,
                 int64_t threads) {
  GluPlan plan{parts, glu, gate, up, gate.w->rows, n_tokens, 0, 0, 0, 0};
  if (n_tokens <= 2 * kMaxTileTokens) {
    plan.chunk_tokens = n_tokens;
    plan.chunk_rows = decode_task_rows(plan.rows, threads, kPackRows);
  } else {
    plan.chunk_tokens = kTaskTokens;
    plan.chunk_rows = kPrefillTaskRows;
  }
  static_assert(kPrefillTaskRows % kPackRows == 0 && kPackRows % kTileRows == 0);
  plan.row_chunks = (plan.rows + plan.chunk_rows - 1) / plan.chunk_rows;
  plan.n_tasks = plan.row_chunks * ((n_tokens + plan.chunk_tokens - 1) / plan.chunk_tokens);
  return plan;
}

void run_glu_task(const GluPlan& p, int64_t task) {
  const int64_t row_begin = (task % p.row_chunks) * p.chunk_rows;
  const int64_t row_end = std::min(p.rows, row_begin + p.chunk_rows);
  const int64_t token_begin = (task / p.row_chunks) * p.chunk_tokens;
  const int64_t token_end = std::min(p.n_tokens, token_begin + p.chunk_tokens);
  run_part_rows(p.parts[0], row_begin, row_end, token_begin, token_end);
  run_part_rows(p.parts[1], row_begin, row_end, token_begin, token_end);
  for (int64_t t = token_begin; t < token_end; ++t) {
    float* g = p.gate.y + t * p.gate.y_stride + row_begin;
    p.glu(g, p.up.y + t * p.up.y_stride + row_begin, row_end - row_begin, g);
  }
}

// ---- decode-shaped calls: units of kSplitRows rows through a RangeSplit ----

constexpr int64_t kSplitRows = kPackRows;  // a packed group; a whole number of unpacked tiles
static_assert(kSplitRows % kTileRows == 0);
// Units a worker takes at a time. One unit (a 16-row group, 5-6 KB of SmolLM2's Q4_1 rows) is
// much longer than the claim's compare-and-swap, and as fine a balance as the split can give.
constexpr int64_t kSplitStepUnits = 1;

// Before its first unit, a worker asks for the first kWarmBytes of its run (into L2, as the
// kernels' own prefetches do). The kernels ask 12 KiB (and 36 KiB) ahead of the block they read,
// so a fresh stream starts with demand misses until those requests catch up, and a decode step
// starts ~240 such streams (two workers, 121 matmuls). SmolLM2 tg128, 2 threads, alternated
// pairs against no warm-up: 8 KiB 1.049 (8 of 8 pairs faster); against 8 KiB, 16 KiB 1.025,
// 4 KiB 0.988; against 16 KiB, 24 KiB 0.957 and 32 KiB 0.967 (too many misses asked at once
// delay the first block's own). 16 KiB against none, later: 1.019 (7 of 10). (Measured with
// the kernels' 12 KiB requests alone; with their 36 KiB ones added, 32 KiB against 16: 1.036,
// 5 of 8, not enough to change.)
constexpr int64_t kWarmBytes = 16384;

// Asks for up to `bytes` of a packed part's rows from 16-row unit `unit` on, within the matrix.
// Unpacked weights (no AVX-512) are left to their kernels' prefetches.
void warm_rows(const Part& part, int64_t unit, int64_t bytes) {
  if (part.packed == nullptr) return;
  const PackedWeights& w = *part.packed_job.w;
  static_assert(kSplitRows == kPackRows);  // a unit is one packed group
  const uint8_t* begin = w.group(unit);
  const int64_t left = static_cast<int64_t>(w.bytes()) - static_cast<int64_t>(w.group_bytes()) * unit;
  for (int64_t at = 0; at < std::min(bytes, left); at += 64) __builtin_prefetch(begin + at, 0, 2);
}

// Whether a part's tokens make one decode-shaped task per row chunk (plan_tasks' first case).
bool decode_shaped(const Part& part, int64_t n_tokens) {
  return n_tokens <= 2 * (part.packed != nullptr ? detail::kMaxPackedTokens : kMaxTileTokens);
}

int64_t split_units(int64_t rows) { return (rows + kSplitRows - 1) / kSplitRows; }

// matmul_same_input's targets laid end to end in units: target i's units are
// [first_unit[i], first_unit[i + 1]).
struct SplitJob {
  const Part* parts = nullptr;
  std::array<int64_t, kMaxMatmulTargets + 1> first_unit{};
  size_t n_targets = 0;
  int64_t n_tokens = 0;
  RangeSplit* split = nullptr;
};

// The first kWarmBytes of the run `part` of the split starts with (warm_rows).
void warm_split_start(const SplitJob& job, int part) {
  const int64_t unit = job.split->front(part);
  for (size_t i = 0; i < job.n_targets; ++i) {
    if (unit < job.first_unit[i + 1]) {
      warm_rows(job.parts[i], unit - job.first_unit[i], kWarmBytes);
      return;
    }
  }
}

void run_split_units(const SplitJob& job, int64_t begin, int64_t end) {
  size_t i = 0;
  while (begin >= job.first_unit[i + 1]) ++i;
  for (; begin < end; ++i) {
    const int64_t stop = std::min(end, job.first_unit[i + 1]);
    const Part& part = job.parts[i];
    const int64_t rows = part.packed != nullptr ? part.packed_job.w->rows() : part.job.w->rows;
    run_part_rows(part, (begin - job.first_unit[i]) * kSplitRows,
                  std::min(rows, (stop - job.first_unit[i]) * kSplitRows), 0, job.n_tokens);
    begin = stop;
  }
}

// matmul_glu's units: the same 16 rows of gate and up, then the activation of those rows
// (16 is a multiple of the activation's 8 lanes, so its results are the standalone op's).
void run_glu_units(const GluPlan& p, int64_t begin, int64_t end) {
  const int64_t row_begin = begin * kSplitRows, row_end = std::min(p.rows, end * kSplitRows);
  run_part_rows(p.parts[0], row_begin, row_end, 0, p.n_tokens);
  run_part_rows(p.parts[1], row_begin, row_end, 0, p.n_tokens);
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    float* g = p.gate.y + t * p.gate.y_stride + row_begin;
    p.glu(g, p.up.y + t * p.up.y_stride + row_begin, row_end - row_begin, g);
  }
}

// One group of matmul_grouped: its parts and, with a GLU, its split.
struct GroupPlan {
  std::array<Part, kMaxMatmulTargets> parts;
  GluPlan glu;
  int64_t first_task = 0, n_tasks = 0;
};

}  // namespace

bool matmul_supports(tensor::DType type) { return detail::scalar_kernels(type) != nullptr; }

void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch) {
  matmul(w, x, x_stride, n_tokens, y, y_stride, pool, scratch, selected_isa());
}

void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch, Isa isa) {
  const MatmulTarget target{&w, y, y_stride};
  matmul_same_input({&target, 1}, x, x_stride, n_tokens, pool, scratch, isa);
}

void matmul_same_input(std::span<const MatmulTarget> targets, const float* x, int64_t x_stride,
                       int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch, Isa isa) {
  std::array<Part, kMaxMatmulTargets> parts;
  if (!prepare_parts(targets, x, x_stride, n_tokens, pool, scratch, isa, parts)) return;
  if (std::all_of(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(targets.size()),
                  [n_tokens](const Part& p) { return decode_shaped(p, n_tokens); })) {
    SplitJob job{parts.data(), {}, targets.size(), n_tokens, &scratch.split};
    for (size_t i = 0; i < targets.size(); ++i) job.first_unit[i + 1] = job.first_unit[i] + split_units(targets[i].w->rows);
    scratch.split.reset(job.first_unit[targets.size()], static_cast<int>(pool.size()));
    const SplitJob* j = &job;  // one pointer captured: std::function keeps it inline
    pool.parallel_for(scratch.split.parts(), [j](int64_t part, unsigned) {
      warm_split_start(*j, static_cast<int>(part));
      j->split->run(static_cast<int>(part), kSplitStepUnits,
                    [j](int64_t begin, int64_t end) { run_split_units(*j, begin, end); });
    });
    return;
  }
  int64_t total_tasks = 0;
  for (size_t i = 0; i < targets.size(); ++i) total_tasks += parts[i].n_tasks;
  const Part* first = parts.data();  // one pointer captured: std::function keeps it inline
  pool.parallel_for(total_tasks, [first](int64_t task, unsigned) {
    const Part* part = first;
    while (task >= part->n_tasks) task -= (part++)->n_tasks;
    if (part->packed != nullptr) {
      run_packed_task(part->packed_job, task);
    } else {
      run_task(part->job, task);
    }
  });
}

void matmul_glu(const MatmulTarget& gate, const MatmulTarget& up, GluRowFn glu, const float* x,
                int64_t x_stride, int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch,
                Isa isa) {
  if (gate.w == nullptr || up.w == nullptr || gate.w->rows != up.w->rows ||
      gate.w->cols != up.w->cols || glu == nullptr) {
    fail("matmul_glu: gate and up weights must have the same shape");
  }
  const MatmulTarget targets[] = {gate, up};
  std::array<Part, kMaxMatmulTargets> parts;
  if (!prepare_parts(targets, x, x_stride, n_tokens, pool, scratch, isa, parts)) return;

  const GluPlan plan = plan_glu(parts.data(), glu, gate, up, n_tokens, pool.size());
  if (decode_shaped(parts[0], n_tokens) && decode_shaped(parts[1], n_tokens)) {
    scratch.split.reset(split_units(plan.rows), static_cast<int>(pool.size()));
    struct Job {
      const GluPlan* plan;
      RangeSplit* split;
    } job{&plan, &scratch.split};
    const Job* j = &job;
    pool.parallel_for(scratch.split.parts(), [j](int64_t part, unsigned) {
      // Its units read gate and up rows alike: half the warm-up in each.
      const int64_t unit = j->split->front(static_cast<int>(part));
      warm_rows(j->plan->parts[0], unit, kWarmBytes / 2);
      warm_rows(j->plan->parts[1], unit, kWarmBytes / 2);
      j->split->run(static_cast<int>(part), kSplitStepUnits,
                    [j](int64_t begin, int64_t end) { run_glu_units(*j->plan, begin, end); });
    });
    return;
  }
  const GluPlan* pp = &plan;
  pool.parallel_for(plan.n_tasks, [pp](int64_t task, unsigned) { run_glu_task(*pp, task); });
}

void matmul_grouped(std::span<const MatmulGroup> groups, GluRowFn glu, ThreadPool& pool,
                    std::vector<MatmulScratch>& scratch, Isa isa) {
  if (scratch.size() < groups.size()) scratch.resize(groups.size());
  // One plan per group (a vector reused by the caller's thread: one MoE layer after another).
  thread_local std::vector<GroupPlan> plans;
  plans.assign(groups.size(), GroupPlan{});
  int64_t total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const MatmulGroup& g = groups[i];
    GroupPlan& plan = plans[i];
    const size_t n_targets = glu != nullptr ? 2 : 1;
    if (g.targets == nullptr) fail("matmul: a group without weights");
    if (glu != nullptr &&
        (g.targets[0].w == nullptr || g.targets[1].w == nullptr || g.targets[0].w->rows != g.targets[1].w->rows ||
         g.targets[0].w->cols != g.targets[1].w->cols)) {
      fail("matmul_glu: gate and up weights must have the same shape");
    }
    if (!prepare_parts({g.targets, n_targets}, g.x, g.x_stride, g.n_tokens, pool, scratch[i], isa, plan.parts)) {
      continue;  // no tokens
    }
    if (glu != nullptr) {
      plan.glu = plan_glu(plan.parts.data(), glu, g.targets[0], g.targets[1], g.n_tokens, pool.size());
      plan.n_tasks = plan.glu.n_tasks;
    } else {
      plan.n_tasks = plan.parts[0].n_tasks;
    }
    plan.first_task = total;
    total += plan.n_tasks;
  }
  struct Job {
    const GroupPlan* plans;
    size_t n;
    bool glu;
  } job{plans.data(), plans.size(), glu != nullptr};
  const Job* j = &job;
  pool.parallel_for(total, [j](int64_t task, unsigned) {
    // The group whose range holds the task (groups are few: a MoE layer's active experts).
    size_t i = 0;
    while (i + 1 < j->n && (j->plans[i].n_tasks == 0 || task >= j->plans[i].first_task + j->plans[i].n_tasks)) ++i;
    const GroupPlan& plan = j->plans[i];
    const int64_t local = task - plan.first_task;
    if (j->glu) {
      run_glu_task(plan.glu, local);
    } else if (plan.parts[0].packed != nullptr) {
      run_packed_task(plan.parts[0].packed_job, local);
    } else {
      run_task(plan.parts[0].job, local);
    }
  });
}

}  // namespace lumen::backend::cpu
