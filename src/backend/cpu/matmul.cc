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
// in units of 16-row groups; their activations are also converted into the packed kernels' form
// while they are quantized.
#include "backend/cpu/matmul.h"

#include <algorithm>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_packed.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using detail::kMaxTileTokens;
using detail::kTileRows;
using detail::TypeKernels;

constexpr int64_t kTaskTokens = 64;       // tokens per prefill task (activations stay in L2)
static_assert(kTaskTokens <= detail::kMaxPanelTokens);
constexpr int64_t kPrefillTaskRows = 32;  // rows per prefill task
constexpr int64_t kMinDecodeTaskRows = 16;
constexpr int64_t kDecodeTasksPerThread = 8;  // enough tasks for the dynamic split to balance
constexpr int64_t kQuantizeTaskTokens = 16;

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

void run_task(const Job& job, int64_t task) {
  const WeightMatrix& w = *job.w;
  const int64_t token_task = task / job.row_tasks;
  const int64_t row_begin = (task % job.row_tasks) * job.task_rows;
  const int64_t row_end = std::min(w.rows, row_begin + job.task_rows);
  const int64_t token_begin = token_task * job.task_tokens;
  const int64_t token_end = std::min(job.n_tokens, token_begin + job.task_tokens);
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

void run_packed_task(const PackedJob& job, int64_t task) {
  const PackedWeights& w = *job.w;
  const int64_t token_task = task / job.group_tasks;
  const int64_t group_begin = (task % job.group_tasks) * job.task_groups;
  const int64_t group_end = std::min(w.groups(), group_begin + job.task_groups);
  const int64_t token_begin = token_task * job.task_tokens;
  const int64_t token_end = std::min(job.n_tokens, token_begin + job.task_tokens);
  const uint8_t* x_rows[detail::kMaxPackedTokens];
  alignas(64) float out[kPackRows * detail::kMaxPackedTokens];
  for (int64_t g = group_begin; g < group_end; ++g) {
    const int64_t r0 = g * kPackRows;
    const int64_t live_rows = std::min<int64_t>(kPackRows, w.rows() - r0);
    const int64_t step = job.kernels->max_tokens;
    for (int64_t t0 = token_begin; t0 < token_end; t0 += step) {
      const int nt = static_cast<int>(std::min<int64_t>(step, token_end - t0));
      for (int t = 0; t < nt; ++t) x_rows[t] = job.xp + static_cast<size_t>(t0 + t) * job.xp_stride;
      job.kernels->tile[nt - 1](w.group(g), w.cols(), x_rows, out);
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

}  // namespace

bool matmul_supports(tensor::DType type) { return detail::scalar_kernels(type) != nullptr; }

void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch) {
  matmul(w, x, x_stride, n_tokens, y, y_stride, pool, scratch, selected_isa());
}

void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch, Isa isa) {
  check_arguments(w, x, x_stride, n_tokens, y, y_stride);
  if (isa > detected_isa()) fail("matmul: this CPU has no {} support", isa_name(isa));
  if (n_tokens == 0) return;
  const TypeKernels* kernels = kernels_at(isa, w.type);
  const int64_t threads = pool.size();
  const detail::PackedKernels* packed =
      w.packed != nullptr && isa >= Isa::kAvx512 ? detail::packed_kernels(w.type) : nullptr;
  size_t xp_stride = 0;
  if (packed != nullptr) {
    xp_stride = detail::packed_activation_bytes(w.cols, packed->extra_words);
    const size_t needed = xp_stride * static_cast<size_t>(n_tokens);
    if (scratch.packed_x.size() < needed) scratch.packed_x.resize(needed);
  }

  // 1. Activations, quantized once per call into the scratch (which only ever grows).
  const uint8_t* xq = reinterpret_cast<const uint8_t*>(x);
  size_t xq_stride = static_cast<size_t>(x_stride) * sizeof(float);
  if (kernels->quantize != nullptr) {
    xq_stride = static_cast<size_t>(*tensor::row_bytes(kernels->act_type, w.cols));
    const size_t needed = xq_stride * static_cast<size_t>(n_tokens);
    if (scratch.quantized_x.size() < needed) scratch.quantized_x.resize(needed);
    uint8_t* dst = scratch.quantized_x.data();
    uint8_t* packed_dst = scratch.packed_x.data();
    const auto quantize_tokens = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        uint8_t* q = dst + static_cast<size_t>(t) * xq_stride;
        kernels->quantize(x + t * x_stride, q, w.cols);
        if (packed != nullptr) packed->pack_activation(q, packed_dst + static_cast<size_t>(t) * xp_stride, w.cols);
      }
    };
    if (threads > 1 && n_tokens >= 2 * kQuantizeTaskTokens) {
      const auto* qt = &quantize_tokens;
      pool.parallel_for((n_tokens + kQuantizeTaskTokens - 1) / kQuantizeTaskTokens,
                        [qt, n_tokens](int64_t task, unsigned) {
                          const int64_t begin = task * kQuantizeTaskTokens;
                          (*qt)(begin, std::min(n_tokens, begin + kQuantizeTaskTokens));
                        });
    } else {
      quantize_tokens(0, n_tokens);
    }
    xq = dst;
  }

  // 2. Tiles.
  if (packed != nullptr) {
    PackedJob job{packed, w.packed, scratch.packed_x.data(), xp_stride, n_tokens, y, y_stride, 0, 0, 0};
    const int64_t groups = w.packed->groups();
    if (n_tokens <= 2 * detail::kMaxPackedTokens) {
      job.task_tokens = n_tokens;
      job.task_groups = std::max<int64_t>(1, groups / (threads * kDecodeTasksPerThread));
    } else {
      job.task_tokens = kTaskTokens;
      job.task_groups = kPackedTaskGroups;
    }
    job.group_tasks = (groups + job.task_groups - 1) / job.task_groups;
    const int64_t token_tasks = (n_tokens + job.task_tokens - 1) / job.task_tokens;
    const PackedJob* jp = &job;
    pool.parallel_for(job.group_tasks * token_tasks,
                      [jp](int64_t task, unsigned) { run_packed_task(*jp, task); });
    return;
  }
  Job job{kernels, &w, xq, xq_stride, n_tokens, y, y_stride, 0, 0, 0};
  if (n_tokens <= 2 * kMaxTileTokens) {
    job.task_tokens = n_tokens;
    const int64_t per_thread = (w.rows + threads * kDecodeTasksPerThread - 1) /
                               (threads * kDecodeTasksPerThread);
    job.task_rows = std::max(kMinDecodeTaskRows, (per_thread + kTileRows - 1) / kTileRows * kTileRows);
  } else {
    job.task_tokens = kTaskTokens;
    job.task_rows = kPrefillTaskRows;
  }
  job.row_tasks = (w.rows + job.task_rows - 1) / job.task_rows;
  const int64_t token_tasks = (n_tokens + job.task_tokens - 1) / job.task_tokens;
  const Job* jp = &job;  // one pointer captured: std::function keeps it without allocating
  pool.parallel_for(job.row_tasks * token_tasks, [jp](int64_t task, unsigned) { run_task(*jp, task); });
}

}  // namespace lumen::backend::cpu
