#pragma once
// Internal to the CUDA backend: paged attention as split-KV tasks.
//
// The query vectors of a call (one per token and query head) are cut into items: up to
// kItemVectors vectors of one sequence that share one KV head (a few query rows x the heads
// of a GQA group). Keys are cut at absolute positions into splits of kSplitKeys; a task is
// (item, split) and produces, for each of its vectors, a partial result over the keys of its
// split that the vector may see. A combine step then merges the splits of each vector in
// split order. Because splits and tiles are aligned to absolute positions and every vector's
// arithmetic is its own, a token's result does not depend on what else is in the batch, and
// decode (one query row) and prefill (many) run the same kernels: decode gets its parallelism
// from the splits (flash-decoding), prefill from the items.
//
// Modes:
//  - Flash: one pass, online softmax in f32 (running max, sum and accumulator per split);
//    the combine rescales the splits to the common max.
//  - Stats + ExactPv: llama.cpp's default arithmetic for an f16 V cache (see
//    backend/cpu/attention.h). Stats finds each split's max and sum of exponentials (the sum in
//    double); a combine gives each vector its row max M and inverse sum; ExactPv then
//    accumulates f16(exp(s - M) * inverse) * v over each split; the combine adds the splits.
// A head's attention sink (AttentionParams::sinks) joins each vector's softmax at the combine
// that merges its splits (Flash's, Stats'), so once per vector however many splits it has.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/attention_layout.h"
#include "backend/cuda/attention_sinks.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/kernels.h"
#include "tensor/dtype.h"

namespace lumen::backend::cuda {

// Per partial slot: the split's max score (or -inf when no key of the split was visible to the
// vector) and its sum of exponentials.
struct PartialStats {
  double sum;
  float max;
  float seen;  // 1 when any key of the split was visible (ExactPv writes only this)
};

enum class AttentionMode { Flash, Stats, ExactPv };

struct AttentionParams {
  // queries and output: row (token * n_heads + head), head_dim floats each
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  // Values per head of V and of the output: head_dim, or fewer when V is the leading part of
  // each key row (values_in_keys: multi-head latent attention, one KV head; v is then unused and
  // the kernels read V from the keys' tile).
  int64_t value_dim = 0;
  bool values_in_keys = false;
  float scale = 1.0f;
  float softcap = 0.0f;
  int64_t window = 0;
  // cache: K and V of the same type (a KV cache type: f32, f16, bf16, q8_0, q4_0, FP8 E4M3);
  // row = block * block_size + slot
  const void* k = nullptr;
  const void* v = nullptr;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  tensor::DType cache_type = tensor::DType::F16;
  int64_t block_size = 16;
  // the plan: explicit (items, tasks), or, when decode.n_seqs > 0, derived in the kernels from
  // the sequences' positions (decode_attention.h; items and tasks unused)
  DecodeShape decode;
  const AttentionSeq* seqs = nullptr;
  const int32_t* block_tables = nullptr;
  const AttentionItem* items = nullptr;
  const AttentionTask* tasks = nullptr;
  // token trees' flags and row positions (AttentionSeq::mask_offset, positions_offset)
  const uint8_t* masks = nullptr;
  const int32_t* positions = nullptr;
  // spans that attend both ways: each row's key end (AttentionSeq::key_ends_offset)
  const int32_t* key_ends = nullptr;
  // ALiBi (AttentionConfig::alibi_max_bias): query head h's scores gain alibi_slopes[h] times minus
  // the distance of its row's position and the key's, after the scale and the cap.
  bool alibi = false;
  float alibi_slopes[kMaxAlibiHeads] = {};
  // Attention sinks (AttentionConfig::sinks): null none, else n_heads logits in device memory (the
  // model's weights, at a fixed address, so a recorded graph's launches may keep the pointer),
  // which the combine adds to each vector's merged max and sum (attention_sinks.h).
  const float* sinks = nullptr;
  // partial results (per slot) and, for the exact modes, per vector (M, inverse sum)
  PartialStats* partial_stats = nullptr;
  float* partial_acc = nullptr;  // value_dim floats per slot
  float2* vector_stats = nullptr;
  // The output also quantized for the GEMV after attention (the output projection), as Q8_0 or
  // Q8_1 (F32: not quantized): token t's row of n_heads * value_dim values is row t of out_q.
  // Requires value_dim % 32 == 0 and out_stride == value_dim (CudaBackendOptions::
  // fused_input_quantization; the combine's warps each hold one 32-value block).
  tensor::DType out_act = tensor::DType::F32;
  Q8Activations out_q;
  // The fused combine (decode launches in Flash mode of heads fused_combine_takes; null: a
  // combine launch follows): one zeroed count per item, which the item's last block to finish
  // finds full, merges the item's splits as the combine kernel would, and zeroes again
  // (CudaBackendOptions::fused_attention_combine).
  unsigned* combine_counters = nullptr;
};

// The heads whose task kernels carry the fused combine: values per lane (DPL, head_dim / 32 rounded
// up) of at most 4. The wider kernels already hold 128 registers a thread, and the combine's loop
// inlined would take them past it (149 and 160 on sm_90), which the build's resource check refuses.
LUMEN_HD constexpr bool fused_combine_dims(int values_per_lane) { return values_per_lane <= 4; }
inline bool fused_combine_takes(int64_t head_dim) { return fused_combine_dims(static_cast<int>((head_dim + 31) / 32)); }

// Runs tasks [0, n_tasks) of params.tasks in `mode`; in decode mode every (item, split) block
// of the decode shape instead (n_tasks unused).
void launch_attention_tasks(AttentionMode mode, const AttentionParams& params, int64_t n_tasks,
                            cudaStream_t stream);
// Merges the partial results of items [0, n_items) of params.items (in decode mode: of every
// item, n_items unused): Flash writes the output, Stats writes vector_stats, ExactPv writes the
// output.
void launch_attention_combine(AttentionMode mode, const AttentionParams& params, int64_t n_items,
                              cudaStream_t stream);

}  // namespace lumen::backend::cuda
