#pragma once
// Internal to the CUDA backend: the tensor-core prefill attention over an f16 paged cache, and an
// encoder's attention over its rows packed as f16 (tensor_core_prefill_math.h describes the
// kernel, tensor_core_prefill_plan.h which calls it takes). One launch per call; writes each taken
// row's output.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/attention_layout.h"
#include "backend/cuda/tensor_core_prefill_math.h"

namespace lumen::backend::cuda {

struct TensorCorePrefillParams {
  // Queries and output: head h of token t at t * token_stride + h * head_stride floats, `dims`
  // values each (dims <= head_dim: the queries' values past dims are read as 0 and the output's
  // are not written).
  const float* q = nullptr;
  int64_t q_head_stride = 0;
  int64_t q_token_stride = 0;
  float* out = nullptr;
  int64_t out_head_stride = 0;
  int64_t out_token_stride = 0;
  int64_t dims = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;  // the tile's (prefill_tile), as the cache rows' heads are laid out
  PrefillScore score;
  int64_t window = 0;
  // Attention sinks: null none, else n_heads logits in device memory (AttentionParams::sinks).
  const float* sinks = nullptr;
  // Every row of a sequence sees every key of it (an encoder), not its window up to itself.
  bool bidirectional = false;
  // The f16 keys and values, each row 16-byte aligned: a paged cache (row = block * block_size +
  // slot through the sequence's block table), or without block tables one row per batch row (key j
  // of a sequence is row first_token + j).
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
