// Dispatch and threading of the CPU matmul: picks the kernels of the selected instruction-set
// level, quantizes the activations once into the caller's scratch, and spreads tiles of
// kTileRows rows x up to kMaxTileTokens tokens over the thread pool.
//
// Work split. A task is a rectangle of rows x tokens. Inside it the loop runs rows outer, tokens
// inner, so the few weight rows of a tile stay in L1 while the task's activations (at most
// kTaskTokens rows, a few hundred KB) stay in L2. With one or a few tokens (decode) a task is
// just a chunk of rows: each weight byte is read from memory exactly once per call.
//
// Packed weights (matmul_packed.h, AVX-512 only) take a path of their own with the same split,
// in units of 16-row groups; their activations are quantized straight into the packed kernels'
// form (matmul_activations.h).
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

#include "backend/cpu/matmul_activations.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_packed.h"
#include "util/error.h"
#include "util/range_split.h"

namespace lumen::backend::cpu {
namespace {

using detail::kMaxTileTokens;
using detail::kTileRows;
using detail::TypeKernels;

constexpr int64_t kTaskTokens = 64;       // tokens per prefill task (activations stay in L2)
static_assert(kTaskTokens <= detail::kMaxPanelTokens);
constexpr int64_t kPrefillTaskRows = 32;  // rows per prefill task
constexpr int64_t kMinDecodeTaskRows = 16;
// Decode-shaped tasks of matmul_grouped (the other calls split such work with a RangeSplit,
// below). Decode streams every weight byte from memory once, and a task is a contiguous run of
// rows: few long tasks keep each thread on one stream, which its prefetches (and the hardware's)
// run ahead of, while every task start is a cold stream. Measured on a noisy 2-core host (median
// of 5 interleaved runs, tg64): 8 tasks per thread of at most 128 KB each -> 2 tasks per thread
// of any size: SmolLM2 Q4_1 246 -> 266 t/s, llama-1B Q4_K 37.7 -> 39.7, llama-1B Q4_0 40.4 ->
// 41.5. Two rather than one leave the dynamic split some room to balance a slowed thread.
constexpr int64_t kDecodeTasksPerThread = 2;

const TypeKernels* kernels_at(Isa isa, tensor::DType type) {
  // Fall back level by level: a level may leave a type to the one below it.
  if (isa >= Isa::kAvx512) {
    if (const TypeKernels* k = detail::avx512_kernels(type)) return k;
  }
  if (isa >= Isa::kAvx2) {
    if (const TypeKernels* k = detail::avx2_kernels(type)) return k;
  }
  return detail::scalar_kernels(type);
}

struct Job {
  const TypeKernels* kernels;
  const WeightMatrix* w;
  const uint8_t* xq;  // activation rows (quantized, or the f32 input itself)
  size_t xq_stride;   // bytes
  int64_t n_tokens;
  float* y;
  int64_t y_stride;
  int64_t task_rows;    // a multiple of kTileRows
  int64_t task_tokens;  // a multiple of kMaxTileTokens, or all tokens
  int64_t row_tasks;
};

// Rows [row_begin, row_end) (row_begin a multiple of kTileRows) for tokens [token_begin, token_end).
void run_rows(const Job& job, int64_t row_begin, int64_t row_end, int64_t token_begin,
              int64_t token_end) {
  const WeightMatrix& w = *job.w;
  const auto* wbase = static_cast<const uint8_t*>(w.data);

  const uint8_t* w_rows[kTileRows];
  const uint8_t* x_rows[detail::kMaxPanelTokens];
  float out[kTileRows * detail::kMaxPanelTokens];
  // A panel kernel takes all of the task's tokens at once (at most kTaskTokens of them).
  const bool use_panel = job.kernels->panel != nullptr && token_end - token_begin > kMaxTileTokens;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kTileRows) {
    const int64_t live_rows = std::min<int64_t>(kTileRows, row_end - r0);
    for (int r = 0; r < kTileRows; ++r) {
      // A short last tile repeats its last row; the extra results are dropped.
      w_rows[r] = wbase + static_cast<size_t>(r0 + std::min<int64_t>(r, live_rows - 1)) * w.row_bytes;
    }
    const int64_t step = use_panel ? token_end - token_begin : kMaxTileTokens;
    for (int64_t t0 = token_begin; t0 < token_end; t0 += step) {
      const int nt = static_cast<int>(std::min<int64_t>(step, token_end - t0));
      for (int t = 0; t < nt; ++t) x_rows[t] = job.xq + static_cast<size_t>(t0 + t) * job.xq_stride;
      if (use_panel) {
        job.kernels->panel(w_rows, x_rows, nt, w.cols, out);
      } else {
        job.kernels->tile[nt - 1](w_rows, x_rows, w.cols, out);
      }
      for (int t = 0; t < nt; ++t) {
        float* yrow = job.y + (t0 + t) * job.y_stride + r0;
        for (int64_t r = 0; r < live_rows; ++r) yrow[r] = out[t * kTileRows + r];
      }
    }
  }
}

// ---- packed weights (matmul_packed.h): tiles of 16 rows (one group) x up to 8 tokens ----

constexpr int64_t kPackedTaskGroups = 2;  // prefill: 32 rows x kTaskTokens tokens per task

struct PackedJob {
  const detail::PackedKernels* kernels;
  const PackedWeights* w;
  const uint8_t* xp;  // packed activation rows
  size_t xp_stride;
  int64_t n_tokens;
  float* y;
  int64_t y_stride;
  int64_t task_groups;
  int64_t task_tokens;
  int64_t group_tasks;
};

// Groups [group_begin, group_end) of 16 rows for tokens [token_begin, token_end).
void run_packed_groups(const PackedJob& job, int64_t group_begin, int64_t group_end,
                       int64_t token_begin, int64_t token_end) {
  const PackedWeights& w = *job.w;
  alignas(64) float out[kPackRows * detail::kMaxPackedTokens];
  for (int64_t g = group_begin; g < group_end; ++g) {
    const int64_t r0 = g * kPackRows;
    const int64_t live_rows = std::min<int64_t>(kPackRows, w.rows() - r0);
    const int64_t step = detail::kMaxPackedTokens;
    for (int64_t t0 = token_begin; t0 < token_end; t0 += step) {
      const int nt = static_cast<int>(std::min<int64_t>(step, token_end - t0));
      job.kernels->tile[nt - 1](w.group(g), w.cols(), job.xp + static_cast<size_t>(t0) * job.xp_stride,
                                job.xp_stride, out);
      for (int t = 0; t < nt; ++t) {
        float* yrow = job.y + (t0 + t) * job.y_stride + r0;
        for (int64_t r = 0; r < live_rows; ++r) yrow[r] = out[t * kPackRows + r];
      }
    }
  }
}

void run_task(const Job& job, int64_t task) {
  const int64_t row_begin = (task % job.row_tasks) * job.task_rows;
  const int64_t token_begin = (task / job.row_tasks) * job.task_tokens;
  run_rows(job, row_begin, std::min(job.w->rows, row_begin + job.task_rows), token_begin,
           std::min(job.n_tokens, token_begin + job.task_tokens));
}

void run_packed_task(const PackedJob& job, int64_t task) {
  const int64_t group_begin = (task % job.group_tasks) * job.task_groups;
  const int64_t token_begin = (task / job.group_tasks) * job.task_tokens;
  run_packed_groups(job, group_begin, std::min(job.w->groups(), group_begin + job.task_groups),
                    token_begin, std::min(job.n_tokens, token_begin + job.task_tokens));
}

void check_arguments(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens,
                     const float* y, int64_t y_stride) {
  if (!matmul_supports(w.type)) {
    fail("matmul: no CPU kernels for weight type {}", tensor::dtype_name(w.type));
  }
  const auto expected_row_bytes = tensor::row_bytes(w.type, w.cols);
  if (w.rows <= 0 || w.cols <= 0 || !expected_row_bytes || *expected_row_bytes != w.row_bytes ||
      w.data == nullptr) {
    fail("matmul: bad {} weight matrix {} x {} ({} bytes per row)", tensor::dtype_name(w.type),
         w.rows, w.cols, w.row_bytes);
  }
  if (n_tokens < 0 || (n_tokens > 0 && (x == nullptr || y == nullptr)) || x_stride < w.cols ||
      y_stride < w.rows) {
    fail("matmul: bad activations ({} tokens, x stride {}, y stride {}) for a {} x {} weight",
         n_tokens, x_stride, y_stride, w.rows, w.cols);
  }
  if (w.packed != nullptr &&
      (w.packed->type() != w.type || w.packed->rows() != w.rows || w.packed->cols() != w.cols)) {
    fail("matmul: packed weights ({} {} x {}) do not match the matrix ({} {} x {})",
         tensor::dtype_name(w.packed->type()), w.packed->rows(), w.packed->cols(),
         tensor::dtype_name(w.type), w.rows, w.cols);
  }
}

// One target of a call: its kernels, where its activations are, and how its tiles are split.
struct Part {
  const TypeKernels* kernels = nullptr;
  const detail::PackedKernels* packed = nullptr;  // non-null: the packed path
  Job job{};
  PackedJob packed_job{};
  int64_t n_tasks = 0;
};

// Rows per decode task, a multiple of `unit` (and at least one): about kDecodeTasksPerThread
// tasks per thread.
int64_t decode_task_rows(int64_t rows, int64_t threads, int64_t unit) {
  const int64_t per_task = (rows + threads * kDecodeTasksPerThread - 1) / (threads * kDecodeTasksPerThread);
  return std::max(unit, (per_task + unit - 1) / unit * unit);
}

// Splits one target's rows x tokens into tasks (see the top of this file).
void plan_tasks(Part& part, int64_t n_tokens, int64_t threads) {
  if (part.packed != nullptr) {
    PackedJob& job = part.packed_job;
    const int64_t groups = job.w->groups();
    if (n_tokens <= 2 * detail::kMaxPackedTokens) {
      job.task_tokens = n_tokens;
      job.task_groups = decode_task_rows(job.w->rows(), threads, kPackRows) / kPackRows;
    } else {
      job.task_tokens = kTaskTokens;
      job.task_groups = kPackedTaskGroups;
    }
    job.group_tasks = (groups + job.task_groups - 1) / job.task_groups;
    part.n_tasks = job.group_tasks * ((n_tokens + job.task_tokens - 1) / job.task_tokens);
    return;
  }
  Job& job = part.job;
  if (n_tokens <= 2 * kMaxTileTokens) {
    job.task_tokens = n_tokens;
    job.task_rows = std::max(kMinDecodeTaskRows, decode_task_rows(job.w->rows, threads, kTileRows));
  } else {
    job.task_tokens = kTaskTokens;
    job.task_rows = kPrefillTaskRows;
  }
  job.row_tasks = (job.w->rows + job.task_rows - 1) / job.task_rows;
  part.n_tasks = job.row_tasks * ((n_tokens + job.task_tokens - 1) / job.task_tokens);
}

// Checks the targets, quantizes x once per activation form and fills one Part per target.
// Returns false when there are no tokens (nothing to do).
bool prepare_parts(std::span<const MatmulTarget> targets, const float* x, int64_t x_stride,
                   int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch, Isa isa,
                   std::array<Part, kMaxMatmulTargets>& parts) {
  if (targets.empty() || targets.size() > kMaxMatmulTargets) {
    fail("matmul: {} weights for one input (1 to {})", targets.size(), kMaxMatmulTargets);
  }
  for (const MatmulTarget& t : targets) {
    if (t.w == nullptr) fail("matmul: no weight matrix");
    check_arguments(*t.w, x, x_stride, n_tokens, t.y, t.y_stride);
  }
  if (isa > detected_isa()) fail("matmul: this CPU has no {} support", isa_name(isa));
  if (n_tokens == 0) return false;
  const size_t n = targets.size();

  std::array<const TypeKernels*, kMaxMatmulTargets> kernels{};
  for (size_t i = 0; i < n; ++i) kernels[i] = kernels_at(isa, targets[i].w->type);
  const detail::ActivationForms forms = detail::quantize_activations(
      targets, std::span(kernels.data(), n), isa >= Isa::kAvx512, x, x_stride, n_tokens, pool, scratch);

  for (size_t i = 0; i < n; ++i) {
    const MatmulTarget& t = targets[i];
    // The activations come from the shared form; the tile kernels are the weight's own (a
    // Q8_0 matrix reads the Q8_0 activations a Q4_0 one made, with its own kernels).
    const detail::ActivationForm& form = forms.of(i);
    Part& part = parts[i];
    part.kernels = kernels[i];
    part.packed = form.packed != nullptr ? detail::packed_kernels(t.w->type) : nullptr;
    if (part.packed != nullptr) {
      part.packed_job = PackedJob{part.packed, t.w->packed, scratch.packed_x.data() + form.xp_offset,
                                  form.xp_stride, n_tokens, t.y, t.y_stride, 0, 0, 0};
    } else {
      const bool quantized = part.kernels->quantize != nullptr;
      part.job = Job{part.kernels,
                     t.w,
                     quantized ? scratch.quantized_x.data() + form.xq_offset
                               : reinterpret_cast<const uint8_t*>(x),
                     quantized ? form.xq_stride : static_cast<size_t>(x_stride) * sizeof(float),
                     n_tokens, t.y, t.y_stride, 0, 0, 0};
    }
    plan_tasks(part, n_tokens, pool.size());
  }
  return true;
}

// Rows [row_begin, row_end) of one part (row_begin a multiple of kPackRows) for some tokens.
void run_part_rows(const Part& part, int64_t row_begin, int64_t row_end, int64_t token_begin,
                   int64_t token_end) {
  if (part.packed != nullptr) {
    run_packed_groups(part.packed_job, row_begin / kPackRows, (row_end + kPackRows - 1) / kPackRows,
                      token_begin, token_end);
  } else {
    run_rows(part.job, row_begin, row_end, token_begin, token_end);
  }
}

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
  int64_t n_tokens = 0;
  RangeSplit* split = nullptr;
};

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
    SplitJob job{parts.data(), {}, n_tokens, &scratch.split};
    for (size_t i = 0; i < targets.size(); ++i) job.first_unit[i + 1] = job.first_unit[i] + split_units(targets[i].w->rows);
    scratch.split.reset(job.first_unit[targets.size()], static_cast<int>(pool.size()));
    const SplitJob* j = &job;  // one pointer captured: std::function keeps it inline
    pool.parallel_for(scratch.split.parts(), [j](int64_t part, unsigned) {
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
