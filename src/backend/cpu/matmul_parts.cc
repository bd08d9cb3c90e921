// The tasks of a matmul call (matmul_parts.h): the kernels each target gets, its activations'
// form, how its rows x tokens are cut into tasks, and the loops that run a task's tiles.
#include "backend/cpu/matmul_parts.h"

#include <algorithm>

#include "backend/cpu/matmul_activations.h"
#include "util/error.h"

namespace lumen::backend::cpu::matmul_internal {

using detail::kMaxTileTokens;
using detail::kTileRows;
using detail::TypeKernels;

namespace {

constexpr int64_t kMinDecodeTaskRows = 16;
// Decode-shaped tasks of matmul_grouped (the other calls split such work with a RangeSplit,
// matmul.cc). Decode streams every weight byte from memory once, and a task is a contiguous run of
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

// Splits one target's rows x tokens into tasks (matmul_parts.h, "Work split").
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

}  // namespace

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

int64_t decode_task_rows(int64_t rows, int64_t threads, int64_t unit) {
  const int64_t per_task = (rows + threads * kDecodeTasksPerThread - 1) / (threads * kDecodeTasksPerThread);
  return std::max(unit, (per_task + unit - 1) / unit * unit);
}

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

void run_part_rows(const Part& part, int64_t row_begin, int64_t row_end, int64_t token_begin,
                   int64_t token_end) {
  if (part.packed != nullptr) {
    run_packed_groups(part.packed_job, row_begin / kPackRows, (row_end + kPackRows - 1) / kPackRows,
                      token_begin, token_end);
  } else {
    run_rows(part.job, row_begin, row_end, token_begin, token_end);
  }
}

}  // namespace lumen::backend::cpu::matmul_internal
