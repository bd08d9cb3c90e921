#pragma once
// Internal to the CUDA backend: the tensor-core prefill attention over an f16 paged cache
// (tensor_core_prefill_math.h describes the kernel, tensor_core_prefill_plan.h which calls it
// takes). One launch per call; writes each taken row's output.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/attention_layout.h"
#include "backend/cuda/tensor_core_prefill_math.h"

namespace lumen::backend::cuda {

struct TensorCorePrefillParams {
  // queries and output: row (token * n_heads + head), head_dim floats each
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  PrefillScore score;
  int64_t window = 0;
  // the f16 cache; row = block * block_size + slot, each row 16-byte aligned
  const void* k = nullptr;
  const void* v = nullptr;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  int64_t block_size = 16;
  // the plan on the device
  const AttentionSeq* seqs = nullptr;
  const int32_t* block_tables = nullptr;
  const PrefillTask* tasks = nullptr;
};

// Runs tasks [0, n_tasks); head_dim must have a tile shape (prefill_tile).
void launch_tensor_core_prefill(const TensorCorePrefillParams& params, int64_t n_tasks, cudaStream_t stream);

}  // namespace lumen::backend::cuda
