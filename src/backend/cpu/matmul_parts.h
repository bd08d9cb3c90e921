#pragma once
// The tasks of a matmul call (matmul.cc's internals, shared by nothing else): per target, its
// kernels, where its activations are, and how its rows x tokens are cut into tasks.
//
// Work split. A task is a rectangle of rows x tokens. Inside it the loop runs rows outer, tokens
// inner, so the few weight rows of a tile stay in L1 while the task's activations (at most
// kTaskTokens rows, a few hundred KB) stay in L2. With one or a few tokens (decode) a task is
// just a chunk of rows: each weight byte is read from memory exactly once per call (matmul.cc
// runs such calls through a RangeSplit over the same rows instead of the tasks).
//
// Packed weights (matmul_packed.h, AVX-512 only) take a path of their own with the same split,
// in units of 16-row groups; their activations are quantized straight into the packed kernels'
// form (matmul_activations.h).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_packed.h"

namespace lumen::backend::cpu::matmul_internal {

inline constexpr int64_t kTaskTokens = 64;       // tokens per prefill task (activations stay in L2)
static_assert(kTaskTokens <= detail::kMaxPanelTokens);
inline constexpr int64_t kPrefillTaskRows = 32;  // rows per prefill task

struct Job {
  const detail::TypeKernels* kernels;
  const WeightMatrix* w;
  const uint8_t* xq;  // activation rows (quantized, or the f32 input itself)
  size_t xq_stride;   // bytes
  int64_t n_tokens;
  float* y;
  int64_t y_stride;
  int64_t task_rows;    // a multiple of detail::kTileRows
  int64_t task_tokens;  // a multiple of detail::kMaxTileTokens, or all tokens
  int64_t row_tasks;
};

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

// One target of a call: its kernels, where its activations are, and how its tiles are split.
struct Part {
  const detail::TypeKernels* kernels = nullptr;
  const detail::PackedKernels* packed = nullptr;  // non-null: the packed path
  Job job{};
  PackedJob packed_job{};
  int64_t n_tasks = 0;
};

// Rows per decode task, a multiple of `unit` (and at least one): about kDecodeTasksPerThread
// tasks per thread.
int64_t decode_task_rows(int64_t rows, int64_t threads, int64_t unit);

// Checks the targets, quantizes x once per activation form and fills one Part per target.
// Returns false when there are no tokens (nothing to do).
bool prepare_parts(std::span<const MatmulTarget> targets, const float* x, int64_t x_stride, int64_t n_tokens,
                   ThreadPool& pool, MatmulScratch& scratch, Isa isa, std::array<Part, kMaxMatmulTargets>& parts);

// Rows [row_begin, row_end) of one part (row_begin a multiple of kPackRows) for some tokens.
void run_part_rows(const Part& part, int64_t row_begin, int64_t row_end, int64_t token_begin, int64_t token_end);

// Task `task` of a part's plan (unpacked or packed).
void run_task(const Job& job, int64_t task);
void run_packed_task(const PackedJob& job, int64_t task);

}  // namespace lumen::backend::cpu::matmul_internal
