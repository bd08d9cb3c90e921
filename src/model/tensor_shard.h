#pragma once
// Tensor parallelism (Megatron-LM's split, issue 21): rank r of N holds a contiguous range of the
// attention heads and of the FFN's intermediate columns of every layer. Q, K, V, gate and up are
// split by their output rows (column-parallel: each rank computes its heads / columns from the
// whole input), the attention output and down projections by their input columns (row-parallel:
// each rank's product is a partial sum of the whole output), so one all-reduce per block half
// restores every rank's full hidden state. The KV cache holds each rank's KV heads only.
// Embeddings, norms and the output head are whole on every rank (only rank 0 computes logits).
//
// Heads are split by KV head, so a query head stays with its key/value head: with fewer KV heads
// than ranks each KV head is held by several ranks that split its query heads.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/hparams.h"
#include "model/pipeline_stage.h"
#include "model/weights.h"

namespace lumen::dist {
class Collectives;
}

namespace lumen::gguf {
struct TensorInfo;
}

namespace lumen::model {

struct TensorShard {
  int rank = 0;
  int size = 1;                       // 1: the whole model in one process
  dist::Collectives* comm = nullptr;  // required when size > 1 (outlives the model)
};

// What one rank holds: [first, first + count) of the query heads, KV heads and FFN columns.
struct ShardRanges {
  int64_t q_head0 = 0, q_heads = 0;
  int64_t kv_head0 = 0, kv_heads = 0;
  int64_t ff0 = 0, ff = 0;
};

// The ranges of `rank` of `size` for a dense transformer. `ff_unit`: the FFN is split in whole
// multiples of it (the quantization block of the down projection, whose columns are split).
// Throws lumen::Error naming why the model cannot be split that way.
ShardRanges shard_ranges(const HParams& hp, int64_t ff_unit, int rank, int size);

// The hyperparameters a rank's layers run with: its heads and FFN columns.
HParams shard_hparams(const HParams& hp, const ShardRanges& ranges);

// Copies of parts of a file's tensors, kept for as long as any model built from them lives.
class ShardBytes {
 public:
  // Rows [row0, row0 + n) of a matrix ({row length, rows}).
  HostTensor rows(const gguf::TensorInfo& info, int64_t row0, int64_t n);
  // Elements [col0, col0 + n) of every row (of a vector too); both must fall on block
  // boundaries of the tensor's type.
  HostTensor columns(const gguf::TensorInfo& info, int64_t col0, int64_t n);

 private:
  struct FreeAligned {
    void operator()(uint8_t* p) const;
  };
  uint8_t* allocate(size_t bytes);
  std::vector<std::unique_ptr<uint8_t[], FreeAligned>> blocks_;
};

// bind_weights' source for a shard: Q/K/V (and their biases), gate and up cut to the rank's
// rows, the attention output and down projections to its columns; every other tensor whole.
// Only the tensors of `layers` are cut (a pipeline stage's; the others stay views of the file,
// never read). The slices are kept in `bytes`.
TensorSource shard_tensor_source(const HParams& hp, const ShardRanges& ranges, const LayerRange& layers,
                                 ShardBytes& bytes);

}  // namespace lumen::model
