#pragma once
// Host side of the tensor-core prefill attention (tensor_core_prefill_math.h): which calls it
// takes, and its tasks. Plain C++, so tests/unit/cuda_host checks them without CUDA's headers.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/attention_layout.h"
#include "backend/cuda/tensor_core_prefill_math.h"

namespace lumen::backend::cuda {

struct PrefillPlan {
  std::vector<AttentionSeq> seqs;     // first_token, start_pos, table_offset, n_tokens
  std::vector<int32_t> block_tables;  // each sequence's blocks, concatenated
  std::vector<PrefillTask> tasks;     // those with the most keys first
};

// A plan uploaded: where its arrays are in device memory (no block tables: null).
struct DevicePrefillPlan {
  const AttentionSeq* seqs = nullptr;
  const int32_t* block_tables = nullptr;
  const PrefillTask* tasks = nullptr;
  int64_t n_tasks = 0;
};

// Why the kernel cannot take this call's layer, or "" when it can: an f16 cache for K and V
// (rows 16-byte aligned), a head dim with a tile shape, values as wide as keys in their own rows,
// no ALiBi.
std::string tensor_core_prefill_refusal(const KvLayer& cache, const AttentionConfig& config);

// Whether the kernel takes this sequence of a call it can take: causal rows (no tree, no span),
// at least kPrefillMinRows of them.
inline bool tensor_core_prefill_takes(const SequenceSlice& seq) {
  return seq.n_tokens >= kPrefillMinRows && seq.visible.empty() && seq.positions.empty() && seq.key_ends.empty();
}

// The tasks of these sequences (each one the kernel takes).
PrefillPlan plan_tensor_core_prefill(std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                     int64_t block_size);

// An encoder's call (Backend::bidirectional_attention) on the same kernel: every row of a sequence
// sees all of its keys; the keys and values are one row per batch row (no block tables), their
// heads at prefill_padded_head_dim(config.head_dim). config.head_dim must have one.
PrefillPlan plan_bidirectional_tensor_core(std::span<const SequenceSlice> seqs, const AttentionConfig& config);

}  // namespace lumen::backend::cuda
