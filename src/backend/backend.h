#pragma once
// The device interface: memory and the ops a transformer forward pass needs. The model code is
// written once against it; backend/cpu and backend/cuda implement it, sharing argument checks
// and parameter code through backend/common. Every op is checked on every backend by one table
// (tests/unit/backend_conformance). A backend is chosen once at start; nothing above this layer
// knows which one it is.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "backend/tensor_view.h"
#include "util/error.h"

namespace lumen::backend {

// Memory owned by a backend (host RAM for the CPU, device memory for CUDA).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

enum class RopeScalingType { None, Linear, Yarn };

struct RopeConfig {
  int64_t rope_dims = 0;          // leading dimensions of each head that rotate (<= head_dim)
  bool neox = false;              // rotate pairs (i, i + d/2) instead of (2i, 2i + 1)
  double freq_base = 10000.0;
  RopeScalingType scaling = RopeScalingType::None;
  double scaling_factor = 1.0;    // linear / YaRN context extension factor
  int64_t original_context = 0;   // YaRN: the context the model was trained at
  double yarn_beta_fast = 32.0;
  double yarn_beta_slow = 1.0;
  double attn_factor = 1.0;       // the file's rope.scaling.attn_factor: cos and sin times it
  // DeepSeek-V2's YaRN (a file with rope.scaling.yarn_log_multiplier): YaRN's magnitude goes into
  // the attention scale instead, so the rotation keeps only attn_factor.
  bool yarn_magnitude_in_scores = false;
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
struct SequenceSlice {
  int64_t first_token = 0;
  int64_t n_tokens = 0;
  int64_t start_pos = 0;
  std::span<const int32_t> block_table;
  std::span<const uint8_t> visible = {};
  std::span<const int32_t> positions = {};
};

struct AttentionConfig {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;             // usually 1 / sqrt(head_dim)
  int64_t sliding_window = 0;     // 0: attend to every earlier position
  float softcap = 0.0f;           // 0: none; else scores become softcap * tanh(s / softcap)
  // Values per head; 0: head_dim. Multi-head latent attention attends with keys of the latent
  // plus a rope part and reads values of the latent only (a value row is a key row's start).
  int64_t value_dim = 0;
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
inline size_t kv_block_bytes(const KvLayer& cache) {
  return cache.k.row_bytes * static_cast<size_t>(cache.block_size);
}
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

// A device's own memory, for sizing the KV cache there.
struct DeviceMemory {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // The device memory buffers come from, when it is not the host's RAM (the CPU: none).
  virtual std::optional<DeviceMemory> device_memory() const { return std::nullopt; }

  // Whether attention takes SequenceSlice::visible (a tree attention mask).
  virtual bool supports_tree_attention() const { return false; }

  // Whether this backend's store_kv, attention and block moves work on a cache of `type`
  // (is_kv_cache_type): every backend has f16 and f32; the CPU also the compressed types.
  virtual bool supports_kv_type(tensor::DType type) const {
    return type == tensor::DType::F16 || type == tensor::DType::F32;
  }

  virtual std::unique_ptr<Buffer> allocate(size_t bytes) = 0;
  // Makes host-resident weights usable by the backend. The CPU backend returns a view of the
  // same memory (weights stay in the mmap: no copy); a device backend uploads them.
  virtual TensorView upload_weights(tensor::DType type, std::array<int64_t, 4> dims,
                                    const void* host_data) = 0;
  virtual void copy_to_host(const TensorView& src, float* dst) = 0;

  // y[t, :] = W x[t, :] for every row t of x. W is {in, out} in any supported type; x and y f32.
  virtual void matmul(const TensorView& w, const TensorView& x, TensorView& y) = 0;
  // Several weights applied to the same x (a layer's Q, K and V; its gate and up): y_i = W_i x.
  // A backend may share work between them (the CPU quantizes x once and runs every tile in one
  // parallel job); by default they run one after the other.
  struct MatmulOutput {
    const TensorView* w;
    TensorView* y;
  };
  virtual void matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) {
    for (const MatmulOutput& o : outputs) matmul(*o.w, x, *o.y);
  }
  // A gated MLP's first half: gate = glu(W_gate x, W_up x), with up receiving W_up x on the way.
  // The CPU computes both products and the activation in one parallel job; by default it is
  // the two matmuls followed by swiglu / geglu.
  enum class Glu { Swiglu, Geglu };
  virtual void matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x,
                          Glu glu, TensorView& gate, TensorView& up) {
    const MatmulOutput outputs[] = {{&gate_w, &gate}, {&up_w, &up}};
    matmul_same_input(x, outputs);
    if (glu == Glu::Geglu) {
      geglu(gate, up, gate);
    } else {
      swiglu(gate, up, gate);
    }
  }
  // The experts of a mixture-of-experts FFN over a flat batch. Each entry is one expert that at
  // least one row of x is routed to: its three matrices (2-D views: a slice of a layer's 3-D
  // expert tensors, expert_matrix() below, or a shared expert's own) and the rows routed to it,
  // each with the slot it fills among its row's n_slots places and its router weight (host
  // memory). A backend runs each expert once over all of its rows (gather, gate and up with the
  // GLU, down), so an expert's weights stream once per step however many tokens chose it.
  struct ExpertWork {
    const TensorView* gate = nullptr;  // {in, ff}
    const TensorView* up = nullptr;    // {in, ff}
    const TensorView* down = nullptr;  // {ff, in}
    std::span<const int32_t> rows;     // rows of x, each at most once per expert
    std::span<const int32_t> slots;    // per row: its place, 0..n_slots-1
    std::span<const float> weights;    // per row: the router's weight
  };
  // out[t, :] = the sum, over the slots filled for row t in slot order, of
  // weight * down(glu(gate x_t, up x_t)); each weighted product is rounded to f32 before it is
  // added, as llama.cpp's graph adds them (0 for a row no slot was filled for). Each (row,
  // slot) pair may be filled once. x and out are f32 {in, n}; out may not alias x.
  virtual void moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                       TensorView& out) {
    (void)x, (void)experts, (void)n_slots, (void)glu, (void)out;
    fail("moe_ffn (a mixture-of-experts FFN) is not supported on the {} backend yet", name());
  }
  // out[i, :] = table[ids[i], :] converted to f32.
  virtual void get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) = 0;
  // out = x / rms(x) * weight, per row (weight f32 of one row's length).
  virtual void rms_norm(const TensorView& x, const TensorView& weight, float eps,
                        TensorView& out) = 0;
  virtual void add(const TensorView& a, const TensorView& b, TensorView& out) = 0;
  // x[t, :] += row for every row t (biases).
  virtual void add_row(TensorView& x, const TensorView& row) = 0;
  virtual void scale(TensorView& x, float factor) = 0;
  // out = silu(gate) * up / gelu_tanh(gate) * up, elementwise.
  virtual void swiglu(const TensorView& gate, const TensorView& up, TensorView& out) = 0;
  virtual void geglu(const TensorView& gate, const TensorView& up, TensorView& out) = 0;
  // x <- H x / sqrt(head_dim) for every head_dim-wide slice of every row (the normalized
  // Walsh-Hadamard transform: orthogonal, its own inverse; head_dim a power of two). What a
  // rotated KV cache (KvLayer::rotated) needs; a backend without quantized caches never gets it.
  virtual void rotate_heads(TensorView& x, int64_t head_dim) {
    (void)x, (void)head_dim;
    fail("rotate_heads (a rotated KV cache) is not supported on the {} backend", name());
  }
  // Mamba 2's causal depthwise convolution with its bias and SiLU, per sequence: for row t of
  // x (f32 {channels, n}, rows may be strided) and channel c,
  //   out[t, c] = silu(bias[c] + sum over k < K of weight[c, k] * in(t - K + 1 + k, c))
  // where in(i) is row i of the sequence's rows for i >= 0 and row K - 1 + i of its conv_window
  // before; the taps are summed in f32 oldest first, then the bias added, as ggml's ssm_conv
  // and add. Each window is then left holding the last K - 1 inputs. weight is f32 {K,
  // channels}; out f32 {channels, n} (may not alias x).
  virtual void ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                        std::span<const SsmSequence> seqs, TensorView& out) {
    (void)x, (void)weight, (void)bias, (void)seqs, (void)out;
    fail("ssm_conv (a state-space model's convolution) is not supported on the {} backend yet", name());
  }
  // Mamba 2's selective scan, per sequence and token in order: for head h (of heads =
  // x.dims[0] / head_dim), with dt' = softplus(dt[t, h] + dt_bias[h]) (ggml's: the input itself
  // above 20) and g = h / (heads / groups), each channel i of the head updates its state row,
  //   state[i, s] = state[i, s] * exp(dt' * A[h]) + B[t, g, s] * (x[t, i] * dt')
  // and outputs y[t, i] = sum over s of state[i, s] * C[t, g, s] + x[t, i] * D[h]. x {inner,
  // n}, dt {heads, n}, b and c {state size * groups, n}: f32, rows may be strided. y f32
  // {inner, n}, may not alias the inputs.
  virtual void ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                        const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) {
    (void)x, (void)dt, (void)b, (void)c, (void)weights, (void)seqs, (void)y;
    fail("ssm_scan (a state-space model's scan) is not supported on the {} backend yet", name());
  }
  // Rotates x in place: dims {head_dim, n_heads, n_tokens}, token t at positions[t].
  virtual void rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) = 0;
  // Writes the batch's new keys and values (dims {head_dim * n_kv_heads, n_tokens}) into the
  // cache at each sequence's positions. When the cache's values are a view of its keys
  // (values_in_keys), only k is stored and v is ignored.
  virtual void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                        KvLayer& cache) = 0;
  // Block-level moves of one layer's K/V, for the serving core: copy-on-write of a shared block
  // (block src -> block dst), and swapping a preempted sequence's blocks out to host memory and
  // back. host_k holds kv_block_bytes(cache) bytes, host_v kv_value_block_bytes(cache).
  virtual void copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) = 0;
  // Token-tree verification: the K/V of cache row src (block * block_size + slot) copied to row
  // dst, so the accepted branch of a tree sits at consecutive positions. A backend without it
  // cannot verify trees: the default refuses with an error.
  virtual void copy_kv_row(KvLayer& cache, int64_t src, int64_t dst);
  virtual void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) = 0;
  virtual void write_kv_block(KvLayer& cache, int64_t block, const void* host_k,
                              const void* host_v) = 0;
  // Context shift: every key row of `blocks` (heads of head_dim values) is rotated by `delta`
  // positions with config's angles and magnitude 1, so a key rotated at position p becomes the
  // key rotated at p + delta (to the cache's rounding). Values are untouched. In a rotated cache
  // (KvLayer::rotated) the key is rotated back, shifted and rotated again. A backend without
  // it cannot shift contexts: the default refuses with an error.
  virtual void shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                          int64_t head_dim);
  // Importance-based KV eviction (engine/kv_importance.h). attention_scores adds, for each of
  // the slice's rows from first_row on, the softmaxed attention its query heads give every
  // cached slot it sees, summed over the query heads sharing a KV head, to
  // scores[slot * slot_stride + kv_head]: a separate pass over the keys of those rows only.
  // gather_kv_rows compacts a sequence's kept slots, head by head: slot j of KV head h in the
  // blocks of dst_table becomes slot keep[h * n_keep + j] of the blocks of src_table (keys and
  // values; the tables may share blocks). The defaults refuse with an error.
  virtual void attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                                const AttentionConfig& config, float* scores, int64_t slot_stride);
  virtual void gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                              std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim);
  // Causal attention of q (dims {head_dim, n_heads, n_tokens}) over each sequence's cached K/V
  // (which already holds this batch's keys), written to out ({value_dim, n_heads, n_tokens};
  // value_dim is head_dim unless the config says otherwise).
  virtual void attention(const TensorView& q, const KvLayer& cache,
                         std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                         TensorView& out) = 0;
};

inline void Backend::copy_kv_row(KvLayer&, int64_t, int64_t) {
  fail("token-tree verification is not supported on the {} backend", name());
}

inline void Backend::shift_keys(KvLayer&, std::span<const int32_t>, int32_t, const RopeConfig&, int64_t) {
  fail("context shift is not supported on the {} backend", name());
}

inline void Backend::attention_scores(const TensorView&, const KvLayer&, const SequenceSlice&, int64_t,
                                      const AttentionConfig&, float*, int64_t) {
  fail("importance-based KV eviction (snapkv, h2o) is not supported on the {} backend", name());
}

inline void Backend::gather_kv_rows(KvLayer&, std::span<const int32_t>, std::span<const int32_t>,
                                    std::span<const int32_t>, int64_t, int64_t) {
  fail("importance-based KV eviction (snapkv, h2o) is not supported on the {} backend", name());
}

}  // namespace lumen::backend
