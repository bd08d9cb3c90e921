#pragma once
// The values the backend's ops take (rope and attention settings, the paged K/V cache's layout,
// a flat batch's sequence slices, a step's metadata), apart from the Backend class so that the
// op observer (op_observer.h) can name them without including it.
#include <cstdint>
#include <span>

#include "backend/expert_routing.h"
#include "backend/tensor_view.h"

namespace lumen::backend {

enum class RopeScalingType { None, Linear, Yarn };

struct RopeConfig {
  int64_t rope_dims = 0;  // leading dimensions of each head that rotate (<= head_dim)
  bool neox = false;      // rotate pairs (i, i + d/2) instead of (2i, 2i + 1)
  double freq_base = 10000.0;
  RopeScalingType scaling = RopeScalingType::None;
  double scaling_factor = 1.0;   // linear / YaRN context extension factor
  int64_t original_context = 0;  // YaRN: the context the model was trained at
  double yarn_beta_fast = 32.0;
  double yarn_beta_slow = 1.0;
  double attn_factor = 1.0;  // the file's rope.scaling.attn_factor: cos and sin times it
  // DeepSeek-V2's YaRN (a file with rope.scaling.yarn_log_multiplier): YaRN's magnitude goes into
  // the attention scale instead, so the rotation keeps only attn_factor.
  bool yarn_magnitude_in_scores = false;
  // YaRN's correction range [low, high] of rotating pairs: floored and ceiled to whole pairs, as
  // llama.cpp and transformers' default do; false keeps the computed ends (gpt-oss's config says
  // "truncate": false, as its reference implementation computes them).
  bool yarn_truncate = true;
  const float* freq_factors = nullptr;  // per-pair divisors (llama3's rope_freqs), or null
};

// K/V storage of one layer, in blocks: dims {head_dim * n_kv_heads, block_size, n_blocks} (V:
// {value_dim * n_kv_heads, ...}). Multi-head latent attention caches one latent row per
// position and reads its values from the keys' leading part: then v is a view of k's memory
// (same data, same row_bytes, narrower rows) and holds nothing of its own.
struct KvLayer {
  TensorView k;
  TensorView v;
  int64_t block_size = 16;
  // Keys and values are stored rotated: each head of head_dim values multiplied by the
  // normalized Walsh-Hadamard matrix (Backend::rotate_heads) before it is rounded to the
  // cache's type. The model rotates the queries the same way (scores are unchanged) and the
  // attention output back. Set by the model's KvCache for quantized caches (kv_cache.h).
  bool rotated = false;
};

// Whether the layer's values are a view of its keys (MLA): block moves then copy K only.
inline bool values_in_keys(const KvLayer& cache) { return cache.v.data != nullptr && cache.v.data == cache.k.data; }

// One sequence's slice of a flat batch: its tokens are rows [first_token, first_token + n_tokens)
// of the batch, at positions [start_pos, start_pos + n_tokens); its K/V lives in the blocks named
// by block_table (position p is row p % block_size of block block_table[p / block_size]).
//
// Tree attention (speculative decoding's extra rows, engine/model_runner.h): when `visible` is
// not empty it holds n_tokens x n_tokens flags, and row i of the slice attends to cached
// positions [0, start_pos) and to the slice's rows j with visible[i * n_tokens + j] (j <= i;
// row i's K/V sits at cache position start_pos + i whatever its rope position). Only backends
// with supports_tree_attention() take it; the others refuse a slice that has one. `positions`,
// with a mask, holds each row's position in the sequence (its rope position: a tree node's is
// the last token's plus its depth, in [start_pos, start_pos + i]); a sliding window counts
// from it, for cached positions and for the rows the mask shows alike. Empty: start_pos + i.
//
// Spans that attend both ways (a Gemma 3 image's positions see each other, as transformers'
// token_type_ids and llama.cpp's non-causal image decode have it): when `key_ends` is not empty
// it holds, for each row i, the end (exclusive) of the cache positions row i sees: at least
// start_pos + i + 1 (causal), at most start_pos + n_tokens (the slice's own rows). A sliding
// window still counts back from the row's position. Only backends that support
// BackendFeature::SpanAttention take it; never with a tree mask.
struct SequenceSlice {
  int64_t first_token = 0;
  int64_t n_tokens = 0;
  int64_t start_pos = 0;
  std::span<const int32_t> block_table;
  std::span<const uint8_t> visible = {};
  std::span<const int32_t> positions = {};
  std::span<const int32_t> key_ends = {};
};

// Whether a slice's rows see other keys than plain causality gives them (a tree mask, or spans
// that attend both ways): such a slice cannot be cut into pieces computed apart.
inline bool has_row_masks(const SequenceSlice& seq) { return !seq.visible.empty() || !seq.key_ends.empty(); }

struct AttentionConfig {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;          // usually 1 / sqrt(head_dim)
  int64_t sliding_window = 0;  // 0: attend to every earlier position
  float softcap = 0.0f;        // 0: none; else scores become softcap * tanh(s / softcap)
  // Values per head; 0: head_dim. Multi-head latent attention attends with keys of the latent
  // plus a rope part and reads values of the latent only (a value row is a key row's start).
  int64_t value_dim = 0;
  // ALiBi (BLOOM, MPT): 0 none; else query head h's scores gain slope_h * -|query pos - key
  // pos|, the slopes geometric in h from max_bias (alibi_slope, backend/common/alibi.h). The
  // head index counts the model's heads: a backend given a subset of them cannot apply it.
  float alibi_max_bias = 0.0f;
  // Attention sinks (gpt-oss): null none; else n_heads f32 values in the backend's memory, one
  // logit per query head (the model's head index, as ALiBi's) that joins each row's softmax
  // without a value: the row's probabilities sum to 1 - p(sink), as llama.cpp's soft_max with
  // sinks computes them (the sink counts in the row's max).
  const float* sinks = nullptr;
};

// One sequence of an attention_scored call whose importance scores are wanted: the rows of
// seqs[sequence] from first_row on add their probabilities to
// scores[slot * slot_stride + kv_head] (Backend::attention_scored).
struct AttentionScoreTarget {
  size_t sequence = 0;
  int64_t first_row = 0;
  float* scores = nullptr;
  int64_t slot_stride = 0;
};

inline int64_t attention_value_dim(const AttentionConfig& config) {
  return config.value_dim != 0 ? config.value_dim : config.head_dim;
}

// The element types a KV cache may hold: f32, f16 (the default), and the compressed ones of
// --kv-cache-dtype: bf16, q8_0 and q4_0 (ggml's 32-value blocks with an f16 scale) and FP8 E4M3
// (tensor/fp8.h, a scale of 1). Quantized rows hold whole blocks per head, so a head's slice
// of a row starts at a block boundary (kv_slice_bytes).
inline bool is_kv_cache_type(tensor::DType type) {
  using tensor::DType;
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::Q8_0 ||
         type == DType::Q4_0 || type == DType::FP8_E4M3;
}

// Bytes of the first `elements` values of a cache row (a whole number of the type's blocks).
inline size_t kv_slice_bytes(tensor::DType type, int64_t elements) {
  const tensor::DTypeInfo& info = tensor::dtype_info(type);
  return static_cast<size_t>(elements / info.block_elements) * info.block_bytes;
}

// Bytes of one block of K in a layer.
inline size_t kv_block_bytes(const KvLayer& cache) { return cache.k.row_bytes * static_cast<size_t>(cache.block_size); }
// Bytes of one block of V that V owns: 0 when the values are a view of the keys.
inline size_t kv_value_block_bytes(const KvLayer& cache) {
  return values_in_keys(cache) ? 0 : cache.v.row_bytes * static_cast<size_t>(cache.block_size);
}

// One sequence of a state-space (Mamba 2) layer's batch: its rows and its recurrent state, which
// the ops read and leave advanced past the sequence's rows (model/state_cache.h owns it).
struct SsmSequence {
  int64_t first_token = 0;
  int64_t n_tokens = 0;
  TensorView conv_window;  // f32 {channels, kernel - 1}: the inputs before the rows, oldest first
  TensorView state;        // f32 {state size, inner}: one row per channel of the inner width
};

// Mamba 2's scan parameters: per head, A (negative) and D ({1, heads} each), dt's bias ({heads}).
struct SsmScanWeights {
  const TensorView* a = nullptr;
  const TensorView* d = nullptr;
  const TensorView* dt_bias = nullptr;
  int64_t head_dim = 0;  // inner width / heads
  int64_t groups = 0;    // B and C groups; head h reads group h / (heads / groups)
};

// RWKV 7's per-token rows for its state update (Backend::rwkv_wkv7): each f32 {heads *
// head_size, n}, rows may be strided (slices of one wider row). w is the decay in (0, 1); RWKV 7
// passes a = -kk and b = kk * iclr (model/rwkv7_block.cc).
struct Wkv7Rows {
  TensorView r, w, k, v, a, b;
};

// One sequence of an RWKV 7 layer's batch: its rows and its wkv state, which the op reads and
// leaves advanced past the rows (model/state_cache.h owns it). The state is f32 {head_size,
// head_size * heads}, contiguous: head h's matrix is rows h * head_size on, row i for value
// channel i, column j for key channel j.
struct Wkv7Sequence {
  int64_t first_token = 0;
  int64_t n_tokens = 0;
  TensorView state;
};

// One sequence of an RWKV 7 token shift (Backend::rwkv7_token_shift): its rows of the batch and
// the row its state keeps, f32 {width, 1}: the last input of the sequence's previous chunk, mixed
// into its first row, and left holding its last row of this one.
struct TokenShiftSequence {
  int64_t first_token = 0;
  int64_t n_tokens = 0;
  TensorView shift;
};

// The element-wise functions of RWKV 7's LoRAs and channel mix (Backend::rwkv7_activation), in
// f32 as llama.cpp's graph computes them: tanh, 1 / (1 + exp(-x)), max(x, 0)^2.
enum class Rwkv7Activation : uint8_t { Tanh, Sigmoid, ReluSquared };

// RWKV 7's decay and key rows (Backend::rwkv7_keys), f32 {width, n} each: w, a and k hold the
// LoRAs' and the key projection's outputs and are rewritten in place; kk and b are written.
struct Rwkv7KeyRows {
  TensorView w, a, k, kk, b;
};
// Their per-channel parameters, f32 of one row: the decay's and the in-context rate's biases,
// and the key's two scales.
struct Rwkv7KeyWeights {
  TensorView w0, a0, k_k, k_a;
};

// A device's own memory, for sizing the KV cache there.
struct DeviceMemory {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

// Several weights applied to the same x (Backend::matmul_same_input): y = w x.
struct MatmulOutput {
  const TensorView* w;
  TensorView* y;
};

// The activation between a gated MLP's two products.
// SwigluOai: gpt-oss's clamped SwiGLU, g = min(gate, 7), u = clamp(up, -7, 7),
// g * sigmoid(1.702 g) * (u + 1) (ggml's swiglu_oai with the constants llama.cpp uses).
enum class Glu { Swiglu, Geglu, SwigluOai };

// An element-wise activation by its textbook formula (Backend::activation: a vision tower's FFN).
enum class Activation : uint8_t {
  QuickGelu,  // x * sigmoid(1.702 x) (CLIP)
  GeluTanh,   // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (SigLIP's "gelu_pytorch_tanh")
  GeluErf,    // 0.5 x (1 + erf(x / sqrt 2))
  Silu,       // x * sigmoid(x)
  Tanh,       // tanh(x): with two scales, a soft cap c tanh(x / c) (Gemma 2's final logits)
};

// One expert of a mixture-of-experts FFN (Backend::moe_ffn): its three matrices (2-D views: a
// slice of a layer's 3-D expert tensors, expert_matrix(), or a shared expert's own) and the rows
// routed to it, each with the slot it fills among its row's n_slots places and its router
// weight (host memory).
struct ExpertWork {
  const TensorView* gate = nullptr;  // {in, ff}
  const TensorView* up = nullptr;    // {in, ff}
  const TensorView* down = nullptr;  // {ff, in}
  std::span<const int32_t> rows;     // rows of x, each at most once per expert
  std::span<const int32_t> slots;    // per row: its place, 0..n_slots-1
  std::span<const float> weights;    // per row: the router's weight
  // gpt-oss: f32 rows of one bias each ({ff}, {ff}, {in}), added to gate x, up x (before the
  // GLU) and to the down product (before the router's weight); null: none.
  const TensorView* gate_bias = nullptr;
  const TensorView* up_bias = nullptr;
  const TensorView* down_bias = nullptr;
};

// A layer's experts as Backend::moe_ffn_routed takes them: the 3-D tensors of every routed expert
// (expert e is the matrix expert_matrix(t, e)), and a shared expert, if the layer has one, that
// every token runs in the slot after its routed ones.
struct RoutedExperts {
  const TensorView* gate = nullptr;         // {in, ff, n_experts}
  const TensorView* up = nullptr;           // {in, ff, n_experts}
  const TensorView* down = nullptr;         // {ff, in, n_experts}
  const TensorView* shared_gate = nullptr;  // {in, ff_shared}, or null: no shared expert
  const TensorView* shared_up = nullptr;    // {in, ff_shared}
  const TensorView* shared_down = nullptr;  // {ff_shared, in}
  // The shared expert's weight per token: routing::shared_expert_gate of this logit (f32, one
  // per token), or 1 where null.
  const TensorView* shared_logit = nullptr;
  // gpt-oss: the routed experts' biases, f32 {ff, 1, n_experts} for gate and up and {in, 1,
  // n_experts} for down (expert e's is expert_matrix(t, e)); null: none. All three or none.
  const TensorView* gate_bias = nullptr;
  const TensorView* up_bias = nullptr;
  const TensorView* down_bias = nullptr;
};

// How a row of a step's logits comes back (StepMetadata::row_forms): what its sampler needs of
// it (sampling::RowNeed). A backend may reduce a row on the device and send back only that; one
// that does not writes the row whole, and the host reduces it.
enum class RowForm : uint8_t {
  Whole = 0,    // the row's logits
  Argmax = 1,   // RowArgmax
  Leading = 2,  // RowLeading
};

// A row of logits reduced to its largest value: what a greedy sampler needs of the row
// (StepMetadata::argmax). `token` is the lowest index holding the row's largest value (NaN is
// never the largest), the sampler's own choice at temperature 0; `finite` is 0 when any value
// of the row is NaN or infinite (the engine fails such a request, as it does for a whole row).
struct RowArgmax {
  int32_t token = -1;  // -1: not computed (the row's logits are in StepMetadata::logits)
  float value = 0.0f;
  int32_t finite = 1;
};

// A row of logits reduced to its most likely tokens: what a sampled draw confined by top-k,
// top-p or min-p needs of it (sampling::LeadingCandidates, Sampler::sample_leading).
inline constexpr int kLeadingCandidates = 64;
struct RowLeading {
  // -1: not computed (the row's logits are in StepMetadata::logits). Otherwise
  // min(kLeadingCandidates, width): the row's largest values, largest first, equal values in
  // index order (NaN never among them), in ids / logits.
  int32_t count = -1;
  int32_t finite = 1;  // as RowArgmax::finite
  // sum over the row of exp((z_i - max z) * scale) for the row's StepMetadata::leading_scale
  // when that is not 0; 0 otherwise.
  double total = 0.0;
  int32_t ids[kLeadingCandidates];
  float logits[kLeadingCandidates];
};

// What one forward pass (a step) reads from the host, handed to the backend once by
// Backend::begin_step: a device backend copies it to device memory in one transfer, and the
// step's ops, which receive these same arrays (or sub-spans of them), read the device copies
// instead of uploading their own. The arrays must stay alive and unchanged until end_step.
struct StepMetadata {
  std::span<const int32_t> tokens;     // the flat batch's token ids (get_rows of the embedding)
  std::span<const int32_t> positions;  // one per token (rope)
  // Every sequence's slice, layer group by layer group (model/forward_batch.h): block tables
  // and, derived from them, each token's cache row (the slot mapping store_kv writes).
  std::span<const SequenceSlice> sequences;
  size_t sequence_groups = 1;           // sequences holds this many groups of equal size
  int64_t block_size = 0;               // the cache's block size, for the slot mapping (0: no K/V)
  std::span<const int32_t> logit_rows;  // the rows that sample, in output order
  // Where end_step leaves the logits: logit_rows.size() rows of logit_width floats (host
  // memory). Null: the step returns no logits (a replayed step, or embeddings).
  float* logits = nullptr;
  int64_t logit_width = 0;
  // How each logit row comes back (RowForm values): empty (every row whole), or one per logit
  // row. A backend may reduce an Argmax row on the device and write only argmax[row], a Leading
  // row and write only leading[row], leaving the row's logits in `logits` unwritten (so a step
  // brings back token ids and a few candidates rather than vocabulary-wide rows); a backend that
  // does not leaves the entry's -1 (RowArgmax::token, RowLeading::count) and writes the logits
  // as for any row. Until the next begin_step, Backend::copy_logit_rows brings back rows it left
  // unwritten. `argmax` and `leading`: logit_rows.size() entries of host memory each (either may
  // be null when no row has its form); `leading_scale`: empty, or per logit row the scale
  // RowLeading::total is wanted at (0: none).
  std::span<const uint8_t> row_forms;
  RowArgmax* argmax = nullptr;
  RowLeading* leading = nullptr;
  std::span<const float> leading_scale;
  // Whose step it is: the model whose weights and scratch its ops use and the K/V cache they read
  // and write, as identities (never dereferenced). A backend that replays recorded steps
  // (Backend::run_replayable) replays one only for the same pair: two engines over one model, or a
  // draft model beside its target, run steps of the same shape over different memory.
  const void* model = nullptr;
  const void* kv_cache = nullptr;
};

}  // namespace lumen::backend
