#pragma once
// The device interface: memory and the ops a transformer forward pass needs. The model code is
// written once against it; backend/cpu and backend/cuda implement it. Every op is checked on
// every backend by one table (tests/unit/backend_conformance). A backend is chosen once at
// start; nothing above this layer knows which one it is.
//
// The public op methods are not virtual (backend/common/backend.cc): each checks its arguments
// once for every backend (backend/common/op_checks.h), tells the observers (op_observer.h), and
// calls the backend's protected do_* implementation, which may assume the checks passed and
// adds only the refusals of its own kernels. A new op is a line in op_observer.h's list, a
// public method with its checks and a do_* whose default refuses (here and in common/backend.cc),
// the CPU's kernel and its conformance rows: no other backend changes until it implements it
// (CONTRIBUTING.md, "Add a backend op").
//
// A forward pass is a step: begin_step hands the backend the step's host metadata once (token
// ids, positions, block tables, sampling rows), the ops in between receive those same arrays,
// and end_step leaves the step's logits in host memory. A device backend uploads the metadata
// in one copy and keeps the logits on the device until end_step; ops outside a step (tests,
// block moves) still take any host arrays.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend_needs.h"
#include "backend/backend_types.h"
#include "backend/op_observer.h"
#include "backend/tensor_view.h"
#include "util/error.h"

namespace lumen::backend {

// How the steps run through Backend::run_replayable ran.
struct StepReplayStats {
  uint64_t eager = 0;     // ran their ops (the backend does not record, the shape was new, ...)
  uint64_t recorded = 0;  // ran by recording their ops, then launching the recording
  uint64_t replayed = 0;  // ran by launching an earlier step's recording
  uint64_t refused = 0;   // a recording was tried and given up (an op cannot be recorded)
  // Why the eager ones were (a backend that records; with step graphs off, none of these):
  uint64_t eager_not_decode = 0;  // a prompt's rows in the step: its launches follow the prompts' lengths
  uint64_t eager_warming = 0;     // a decode shape's first steps, or its first since memory moved
  uint64_t eager_refused = 0;     // a decode shape whose recording was given up
  uint64_t eager_over_limit = 0;  // a decode shape past the recordings kept
};

// Device time of whole steps (Backend::time_steps): from begin_step to the last copy back, on the
// device's own clock, summed over the steps that waited for the device at their end.
struct StepDeviceTime {
  uint64_t steps = 0;
  double seconds = 0.0;
};

// A device's limits as it measured them (Backend::measure_device_ceilings).
struct DeviceCeilings {
  std::string device;     // "NVIDIA H200"
  double copy_gbps = 0;   // a device-to-device copy: bytes read plus bytes written, per second (1e9)
  double f16_tflops = 0;  // a large f16 matrix product (f32 sums) on the tensor cores
  double int8_tops = 0;   // the same in int8 (int32 sums); 0 where the library refused it
};

// Memory owned by a backend (host RAM for the CPU, device memory for CUDA).
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // The device memory buffers come from, when it is not the host's RAM (the CPU: none).
  virtual std::optional<DeviceMemory> device_memory() const { return std::nullopt; }

  // --- What this backend runs (backend_needs.h), asked once at load so that a model or an
  // option it lacks is refused there, never inside a step.
  bool supports(BackendFeature feature) const { return do_supports(feature); }
  // Whether attention takes SequenceSlice::visible (a tree attention mask).
  bool supports_tree_attention() const { return supports(BackendFeature::TreeAttention); }
  // Whether matmul and get_rows read weights stored as `type`.
  bool supports_weight_type(tensor::DType type) const { return do_supports_weight_type(type); }
  // Whether this backend's store_kv, attention and block moves work on a cache of `type`
  // (is_kv_cache_type): every backend has f16 and f32; the CPU also the compressed types.
  bool supports_kv_type(tensor::DType type) const { return do_supports_kv_type(type); }
  // The widest head (values of a key row) attention takes; 0: any. A latent cache's rows (values
  // a view of the keys, BackendFeature::LatentAttention) may have their own limit.
  int64_t max_attention_head_dim() const { return do_max_attention_head_dim(); }
  int64_t max_latent_attention_head_dim() const { return do_max_latent_attention_head_dim(); }
  // Whether this backend runs `op` rather than refusing it: true for the ops every backend runs,
  // supports(F) for those of a feature, do_has_op for a declared op (op_observer.h's list). A
  // caller asks before a declared op and otherwise runs the ops it fuses.
  bool has_op(OpKind op) const;
  // Everything in `needs` this backend lacks, each named for a user; empty when it runs it all.
  std::vector<std::string> unsupported(const BackendNeeds& needs) const;
  // Throws lumen::Error naming, in one message, everything in `needs` this backend lacks:
  // "<subject> needs X, Y, which the cuda backend does not run yet; use --device cpu".
  void require(const BackendNeeds& needs, std::string_view subject) const;

  // Observers see every op from now on, in the order added (op_observer.h). Not owned.
  void add_observer(OpObserver* observer);
  void remove_observer(OpObserver* observer);

  // --- The step boundary.
  // Opens a step: the metadata is the backend's until end_step (the arrays must outlive it).
  // Throws when a step is open already or the metadata does not fit together.
  void begin_step(const StepMetadata& step);
  // Where the step's output projection writes its logits: logit_rows.size() rows of
  // logit_width f32 values (the CPU: the host array itself; a device: its own memory).
  TensorView step_logits();
  // Closes the step; its logits are in StepMetadata::logits when this returns.
  void end_step();
  // Closes a step that failed part way (nothing is copied back). Never throws.
  void abort_step() noexcept;
  // After end_step, until the next begin_step: rows `rows` of the step's logits, each to its
  // place in `logits` (row r at logits + r * logit_width, as end_step lays them out), for rows
  // the backend reduced (StepMetadata::row_forms) and left unwritten, whose samplers turned out
  // to need them whole. One wait for all of them. Throws when no step that returned logits has
  // ended since the last begin_step, or a row is not one of its rows.
  void copy_logit_rows(std::span<const int32_t> rows, float* logits);
  bool in_step() const { return in_step_; }
  // The open step's metadata (meaningful only while in_step()).
  const StepMetadata& step() const { return step_; }
  // Runs `ops`: the open step's ops from here to end_step, all of them. The caller promises that
  // what they do depends on nothing but the step's shape (its numbers of tokens, sequences and
  // logit rows), the device memory they name and the contents of the step's metadata arrays:
  // then a backend that records steps (CUDA graphs, when enabled) may replay what an earlier
  // step of the same shape recorded instead of calling `ops`. With an observer watching, `ops`
  // always run, so it sees every op.
  void run_replayable(const std::function<void()>& ops);
  StepReplayStats step_replay_stats() const { return do_step_replay_stats(); }
  // Times each step on the device from now on (off: stops), where the backend can (a device's
  // events; the CPU has no separate device time and counts none). Not inside a step.
  void time_steps(bool on);
  StepDeviceTime step_device_time() const { return do_step_device_time(); }
  // Op times for a profiler (lumen bench profile), on the clock that sees this backend's work:
  // the host's on the CPU, whose ops are done when they return; the device's own on CUDA, whose
  // ops return once their work is queued (events in its stream; while timing, each step's work
  // is held back on the device until the host first waits for it, so that its ops run back to
  // back as in a replayed step, not at the pace the host queues them). time_ops(true) starts
  // timing and returns false where the backend cannot time its ops; mark_op_time() records the
  // point its queue of work has reached (call it before and after an op); take_op_times()
  // returns the marks since the last take, each in nanoseconds after the first of them, waiting
  // for the device where needed. Not inside a step, but for mark_op_time.
  bool time_ops(bool on);
  void mark_op_time() { do_mark_op_time(); }
  std::vector<double> take_op_times();
  // A device's measured limits for a roofline (nullopt on the CPU, whose limits the profiler
  // measures itself): its copy bandwidth and its tensor cores' matrix-product rates. Takes about
  // a second; not inside a step.
  std::optional<DeviceCeilings> measure_device_ceilings();

  // --- Memory.
  std::unique_ptr<Buffer> allocate(size_t bytes);
  // Host memory that this backend's copies to and from the host are fastest with (a device's
  // page-locked memory; the CPU's ordinary memory): where a step's logits land (StepMetadata::
  // logits). Slow to allocate on a device: kept and reused, never made inside a step.
  std::unique_ptr<Buffer> allocate_host(size_t bytes);
  // Makes host-resident weights usable by the backend. The CPU backend returns a view of the
  // same memory (weights stay in the mmap: no copy); a device backend uploads them.
  TensorView upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data);
  // src's rows converted to f32, into host memory (a device backend waits for its work).
  void copy_to_host(const TensorView& src, float* dst);
  // The reverse, into an F32 activation (rows of it: dst may be a slice): embedding rows that
  // come from outside the model, an image encoder's, replace the token embeddings there.
  void copy_from_host(const float* src, TensorView& dst);

  // --- Ops.
  // y[t, :] = W x[t, :] for every row t of x. W is {in, out} in any supported type; x and y f32.
  void matmul(const TensorView& w, const TensorView& x, TensorView& y);
  // Several weights applied to the same x (a layer's Q, K and V; its gate and up): y_i = W_i x.
  // A backend may share work between them (the CPU quantizes x once and runs every tile in one
  // parallel job); by default they run one after the other.
  using MatmulOutput = backend::MatmulOutput;
  void matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs);
  // A gated MLP's first half: gate = glu(W_gate x, W_up x), with up receiving W_up x on the way.
  // The CPU computes both products and the activation in one parallel job; by default it is
  // the two matmuls followed by swiglu / geglu.
  using Glu = backend::Glu;
  void matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu, TensorView& gate,
                  TensorView& up);
  // The experts of a mixture-of-experts FFN over a flat batch, each expert that at least one
  // row of x is routed to (backend_types.h). A backend runs each expert once over all of its
  // rows (gather, gate and up with the GLU, down), so an expert's weights stream once per step
  // however many tokens chose it. out[t, :] = the sum, over the slots filled for row t in slot
  // order, of weight * down(glu(gate x_t, up x_t)); each weighted product is rounded to f32
  // before it is added, as llama.cpp's graph adds them (0 for a row no slot was filled for).
  // Each (row, slot) pair may be filled once. x and out are f32 {in, n}; out may not alias x.
  using ExpertWork = backend::ExpertWork;
  void moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu, TensorView& out);
  // A MoE layer's routing where its logits are: for each row t of logits (f32 {n_experts, n}),
  // the config's n_used experts in slot order and their weights, as common::route_tokens
  // chooses them, into experts (i32 {n_used, n}) and weights (f32 {n_used, n}); each chosen
  // expert adds 1 to its entry of counts (f32 {n_experts}; null: not counted), which stays
  // exact while the entries are below 2^24 (the caller drains them before). selection_bias:
  // null or f32 {n_experts}. On a device nothing comes back to the host. Declared: ask
  // has_op(OpKind::RouteExperts) first.
  void route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                     TensorView& experts, TensorView& weights, TensorView* counts);
  // moe_ffn for a routing route_experts wrote: row t's slot s runs expert experts[t, s] of the
  // 3-D tensors with weight weights[t, s], and a shared expert (if any) fills slot n_used;
  // out is what moe_ffn gives for the same routing. An expert id outside [0, n_experts) is
  // refused where the backend reads the ids on the host and adds nothing where it does not.
  // Declared: ask has_op(OpKind::MoeFfnRouted) first.
  void moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                      const RoutedExperts& matrices, Glu glu, TensorView& out);
  // out[i, :] = table[ids[i], :] converted to f32.
  void get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out);
  // out = x / rms(x) * weight, per row (weight f32 of one row's length).
  void rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out);
  void add(const TensorView& a, const TensorView& b, TensorView& out);
  // The residual add and the next norm in one pass: sum = a + b, then out = rms_norm(sum,
  // weight, eps), bit for bit what add followed by rms_norm gives. sum may alias a or b, out may
  // alias a or b but not sum. Declared: ask has_op(OpKind::AddRmsNorm) first.
  void add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps, TensorView& sum,
                    TensorView& out);
  // x[t, :] += row for every row t (biases).
  void add_row(TensorView& x, const TensorView& row);
  void scale(TensorView& x, float factor);
  // out = silu(gate) * up / gelu_tanh(gate) * up, elementwise.
  void swiglu(const TensorView& gate, const TensorView& up, TensorView& out);
  void geglu(const TensorView& gate, const TensorView& up, TensorView& out);
  // LayerNorm blocks (BackendFeature::LayerNorm: BERT encoders, BLOOM). layer_norm: each row of
  // x to (x - mean) / sqrt(variance + eps) * weight + bias into the same row of out (which may
  // be x), the mean, the variance and the normalised value computed in double and rounded once:
  // a post-norm model's rows grow with depth, and a float sum of squares loses the small ones.
  // weight and bias are f32 of one row's length.
  void layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps, TensorView& out);
  // x <- x * Phi(x) in place: the exact GELU with erf, in double, rounded once (BERT's "gelu",
  // Hugging Face's, not the tanh approximation).
  void gelu_erf(TensorView& x);
  // x <- gelu_tanh(x) in place, as ggml computes it: from its f16 table for |x| < 10 (input and
  // output rounded to f16), x itself above, 0 below (backend/common/gelu_table.h; BLOOM's FFN,
  // so that logits match llama.cpp's). geglu's activation, alone.
  void gelu_tanh(TensorView& x);
  // x <- f(x) in place for the Activation `kind`, by its formula in double, rounded once (a
  // vision tower's FFN, as Hugging Face computes it: not gelu_tanh's table).
  void activation(TensorView& x, Activation kind);
  // x <- H x / sqrt(head_dim) for every head_dim-wide slice of every row (the normalized
  // Walsh-Hadamard transform: orthogonal, its own inverse; head_dim a power of two). What a
  // rotated KV cache (KvLayer::rotated) needs; a backend without quantized caches never gets it.
  void rotate_heads(TensorView& x, int64_t head_dim);
  // Mamba 2's causal depthwise convolution with its bias and SiLU, per sequence: for row t of
  // x (f32 {channels, n}, rows may be strided) and channel c,
  //   out[t, c] = silu(bias[c] + sum over k < K of weight[c, k] * in(t - K + 1 + k, c))
  // where in(i) is row i of the sequence's rows for i >= 0 and row K - 1 + i of its conv_window
  // before; the taps are summed in f32 oldest first, then the bias added, as ggml's ssm_conv
  // and add. Each window is then left holding the last K - 1 inputs. weight is f32 {K,
  // channels}; out f32 {channels, n} (may not alias x).
  void ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                std::span<const SsmSequence> seqs, TensorView& out);
  // Mamba 2's selective scan, per sequence and token in order: for head h (of heads =
  // x.dims[0] / head_dim), with dt' = softplus(dt[t, h] + dt_bias[h]) (ggml's: the input itself
  // above 20) and g = h / (heads / groups), each channel i of the head updates its state row,
  //   state[i, s] = state[i, s] * exp(dt' * A[h]) + B[t, g, s] * (x[t, i] * dt')
  // and outputs y[t, i] = sum over s of state[i, s] * C[t, g, s] + x[t, i] * D[h]. x {inner,
  // n}, dt {heads, n}, b and c {state size * groups, n}: f32, rows may be strided. y f32
  // {inner, n}, may not alias the inputs.
  void ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y);
  // RWKV 7's state update (the generalized delta rule), per sequence, head and token in order:
  // with r, w, k, v, a, b the head's slices of the token's rows (Wkv7Rows) and S the head's
  // state (Wkv7Sequence),
  //   sa_i = sum_j a_j S[i][j];  S[i][j] = S[i][j] w_j + v_i k_j + sa_i b_j;
  //   out[t, i] = sum_j S[i][j] r_j
  // in f32, the sums over j in any order (ggml's rwkv_wkv7 to f32 rounding). The rows are f32
  // {heads * head_size, n} of one row stride; out f32 of the same shape, overlapping no input.
  // Sequences' rows lie inside the batch without overlapping and their states are distinct:
  // sequences and heads run in parallel. A backend without it (supports(Rwkv7) false) refuses.
  void rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs, TensorView& out);
  // RWKV 7's element-wise work (BackendFeature::Rwkv7; model/rwkv7_block.h says where each comes
  // in), in f32 rounded as llama.cpp's rwkv7 graph rounds it. All tensors f32.
  // rwkv7_norm: each group of `group` values of each row of x (the row for a LayerNorm, a head for
  // the group norm) to (x - mean) * inv * weight + bias into out (which may be x): mean and
  // variance summed in double, inv = 1 / sqrt(variance + eps) rounded to f32, x - mean rounded to
  // f32, the products and the bias in f32. weight and bias are one row each.
  void rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps, int64_t group,
                  TensorView& out);
  // Token shift: row m * n + t of out = x_t + (x_prev - x_t) * mixes[m] for each mix m (row m of
  // mixes, {width, n_mix}) and row t of the batch, x_prev the previous row of t's sequence or, for
  // its first, the sequence's shift row; then each sequence's shift row becomes its last row. out
  // {width, n * n_mix} overlaps neither x nor a shift row; rows no sequence owns are left alone.
  void rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                         TensorView& out);
  // x <- f(x) element-wise (Rwkv7Activation).
  void rwkv7_activation(TensorView& x, Rwkv7Activation f);
  // v += (first - v) * sigmoid(mix + v0) element-wise (v0 one row): layers past the first pull
  // their values toward layer 0's.
  void rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix, const TensorView& v0);
  // Per row: w = exp(-0.606531 sigmoid(w + w0)); a = sigmoid(a + a0); kk = k * k_k scaled to unit
  // length per head of head_size (the length floored at 1e-12); k += a * (k * k_a) - k * k_a;
  // b = kk * a; kk = -kk (what rwkv_wkv7 takes as its a and b).
  void rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size);
  // out = (out + v * bonus) * g per head of head_size, bonus = the head's sum of r * k * r_k
  // (in channel order; r_k one row).
  void rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                        const TensorView& g, const TensorView& r_k, int64_t head_size);
  // Rotates x in place: dims {head_dim, n_heads, n_tokens}, token t at positions[t].
  void rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config);
  // Writes the batch's new keys and values (dims {head_dim * n_kv_heads, n_tokens}) into the
  // cache at each sequence's positions. When the cache's values are a view of its keys
  // (values_in_keys), only k is stored and v is ignored.
  void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs, KvLayer& cache);
  // A layer's rotary embedding and K/V store in one pass: rope(q), rope(k), then store_kv of k's
  // rows (its heads side by side, as the projection wrote them) and v, bit for bit those three
  // ops. q and k as rope takes them ({head_dim, heads, tokens}; k's heads contiguous), v as
  // store_kv takes it; q, k and v may not overlap. Declared: ask has_op(OpKind::RopeStoreKv).
  void rope_store_kv(TensorView& q, TensorView& k, const TensorView& v, std::span<const int32_t> positions,
                     const RopeConfig& config, std::span<const SequenceSlice> seqs, KvLayer& cache);
  // Block-level moves of one layer's K/V, for the serving core: copy-on-write of a shared block
  // (block src -> block dst), and swapping a preempted sequence's blocks out to host memory and
  // back. host_k holds kv_block_bytes(cache) bytes, host_v kv_value_block_bytes(cache).
  void copy_kv_block(KvLayer& cache, int64_t src, int64_t dst);
  // Token-tree verification: the K/V of cache row src (block * block_size + slot) copied to row
  // dst, so the accepted branch of a tree sits at consecutive positions. A backend without it
  // cannot verify trees: it refuses with an error.
  void copy_kv_row(KvLayer& cache, int64_t src, int64_t dst);
  void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v);
  void write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v);
  // Context shift: every key row of `blocks` (heads of head_dim values) is rotated by `delta`
  // positions with config's angles and magnitude 1, so a key rotated at position p becomes the
  // key rotated at p + delta (to the cache's rounding). Values are untouched. In a rotated cache
  // (KvLayer::rotated) the key is rotated back, shifted and rotated again. A backend without
  // it cannot shift contexts: it refuses with an error.
  void shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                  int64_t head_dim);
  // Importance-based KV eviction (engine/kv_importance.h). attention_scores adds, for each of
  // the slice's rows from first_row on, the softmaxed attention its query heads give every
  // cached slot it sees, summed over the query heads sharing a KV head, to
  // scores[slot * slot_stride + kv_head]: a separate pass over the keys of those rows only.
  // gather_kv_rows compacts a sequence's kept slots, head by head: slot j of KV head h in the
  // blocks of dst_table becomes slot keep[h * n_keep + j] of the blocks of src_table (keys and
  // values; the tables may share blocks). A backend without them refuses with an error.
  void attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                        const AttentionConfig& config, float* scores, int64_t slot_stride);
  void gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                      std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim);
  // Causal attention of q (dims {head_dim, n_heads, n_tokens}) over each sequence's cached K/V
  // (which already holds this batch's keys), written to out ({value_dim, n_heads, n_tokens};
  // value_dim is head_dim unless the config says otherwise).
  void attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                 const AttentionConfig& config, TensorView& out);
  // An encoder's attention (BackendFeature::Encoder): no cache and no mask, every row of a
  // sequence attends to every row of the same sequence. q {head_dim * n_heads, n}, k and v
  // {head_dim * n_kv_heads, n} are this pass's own rows (a slice's rows first_token ..
  // first_token + n_tokens; start_pos and the block table are unused), out like q (may not
  // overlap them). Per row and head: softmax(q.k * scale) over the sequence's rows times their
  // values, every dot product, exponential and sum in double, rounded once. The config's
  // sliding window, softcap, ALiBi and value width must be unset.
  void bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                               std::span<const SequenceSlice> seqs, const AttentionConfig& config, TensorView& out);
  // attention, and for each target the scores attention_scores would add for its rows, taken
  // from the attention's own pass where the backend holds its probabilities: no second q.k over
  // the keys. The scores are then the probabilities exactly as the attention weighed the values
  // (the CPU's f16 V cache: rounded to f16), so they may differ from attention_scores' in the
  // last bits; a backend that cannot take them from its pass runs attention_scores' arithmetic.
  // Targets name distinct sequences. Declared: ask has_op(OpKind::AttentionScored) first, and
  // otherwise run attention, then attention_scores per target.
  void attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                        const AttentionConfig& config, std::span<const AttentionScoreTarget> targets, TensorView& out);

 protected:
  // The implementations. Arguments arrive checked (op_checks.h); the defaults of the optional
  // ones refuse (or, for the fused matmuls, run the plain ops).
  virtual std::unique_ptr<Buffer> do_allocate(size_t bytes) = 0;
  // By default: ordinary host memory.
  virtual std::unique_ptr<Buffer> do_allocate_host(size_t bytes);
  virtual TensorView do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) = 0;
  virtual void do_copy_to_host(const TensorView& src, float* dst) = 0;
  virtual void do_copy_from_host(const float* src, TensorView& dst) = 0;
  virtual void do_matmul(const TensorView& w, const TensorView& x, TensorView& y) = 0;
  virtual void do_matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs);
  virtual void do_matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu,
                             TensorView& gate, TensorView& up);
  virtual void do_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                          TensorView& out);
  virtual void do_route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                                TensorView& experts, TensorView& weights, TensorView* counts);
  virtual void do_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                                 const RoutedExperts& matrices, Glu glu, TensorView& out);
  virtual void do_get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) = 0;
  virtual void do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) = 0;
  virtual void do_add(const TensorView& a, const TensorView& b, TensorView& out) = 0;
  virtual void do_add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps,
                               TensorView& sum, TensorView& out);
  virtual void do_add_row(TensorView& x, const TensorView& row) = 0;
  virtual void do_scale(TensorView& x, float factor) = 0;
  virtual void do_swiglu(const TensorView& gate, const TensorView& up, TensorView& out) = 0;
  virtual void do_geglu(const TensorView& gate, const TensorView& up, TensorView& out) = 0;
  virtual void do_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                             TensorView& out);
  virtual void do_gelu_erf(TensorView& x);
  virtual void do_gelu_tanh(TensorView& x);
  virtual void do_activation(TensorView& x, Activation kind);
  virtual void do_rotate_heads(TensorView& x, int64_t head_dim);
  virtual void do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) = 0;
  virtual void do_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                           KvLayer& cache) = 0;
  virtual void do_rope_store_kv(TensorView& q, TensorView& k, const TensorView& v, std::span<const int32_t> positions,
                                const RopeConfig& config, std::span<const SequenceSlice> seqs, KvLayer& cache);
  virtual void do_copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) = 0;
  virtual void do_copy_kv_row(KvLayer& cache, int64_t src, int64_t dst);
  virtual void do_read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) = 0;
  virtual void do_write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) = 0;
  virtual void do_shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                             int64_t head_dim);
  virtual void do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                           std::span<const SsmSequence> seqs, TensorView& out);
  virtual void do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                           const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y);
  virtual void do_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                            TensorView& out);
  virtual void do_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps,
                             int64_t group, TensorView& out);
  virtual void do_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs,
                                    const TensorView& mixes, TensorView& out);
  virtual void do_rwkv7_activation(TensorView& x, Rwkv7Activation f);
  virtual void do_rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                                       const TensorView& v0);
  virtual void do_rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size);
  virtual void do_rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                                   const TensorView& g, const TensorView& r_k, int64_t head_size);
  virtual void do_attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq,
                                   int64_t first_row, const AttentionConfig& config, float* scores,
                                   int64_t slot_stride);
  virtual void do_gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table,
                                 std::span<const int32_t> dst_table, std::span<const int32_t> keep, int64_t head_dim,
                                 int64_t value_dim);
  virtual void do_attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                            const AttentionConfig& config, TensorView& out) = 0;
  virtual void do_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                          std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                          TensorView& out);
  virtual void do_attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                                   const AttentionConfig& config, std::span<const AttentionScoreTarget> targets,
                                   TensorView& out);
  // The capabilities (the public queries above). The defaults are what every backend must
  // have: no optional feature, f32 and f16 weights and caches, heads of any width.
  virtual bool do_supports(BackendFeature feature) const;
  virtual bool do_supports_weight_type(tensor::DType type) const;
  virtual bool do_supports_kv_type(tensor::DType type) const;
  virtual int64_t do_max_attention_head_dim() const { return 0; }
  virtual int64_t do_max_latent_attention_head_dim() const { return do_max_attention_head_dim(); }
  // Whether this backend implements the declared op `op` (no declared op by default).
  virtual bool do_has_op(OpKind op) const {
    (void)op;
    return false;
  }
  // A declared op's public method calls require_op first; its default do_* calls refuse_op,
  // which throws "the <backend> backend has no <op> (...)".
  void require_op(OpKind op) const;
  [[noreturn]] void refuse_op(OpKind op) const;
  // moe_ffn and its routed forms with gpt-oss's experts on a backend without BiasedExperts.
  void refuse_unless_biased_experts(std::string_view op) const;
  // attention's and attention_scored's argument checks (shapes, and what this backend masks).
  void check_attention_call(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                            const AttentionConfig& config, const TensorView& out) const;
  // The step boundary's device side: by default (host memory) nothing moves and the logits are
  // written straight into the host array.
  virtual void do_begin_step(const StepMetadata& step) { (void)step; }
  virtual TensorView do_step_logits();
  virtual void do_end_step() {}
  virtual void do_abort_step() noexcept {}
  // copy_logit_rows' device side (the rows and the last step checked). By default a backend
  // reduces no row, so there is none to copy.
  virtual void do_copy_logit_rows(std::span<const int32_t> rows, int64_t width, float* logits);
  // By default a step's ops just run.
  virtual void do_run_replayable(const std::function<void()>& ops) { ops(); }
  virtual StepReplayStats do_step_replay_stats() const { return {}; }
  virtual void do_time_steps(bool /*on*/) {}
  virtual StepDeviceTime do_step_device_time() const { return {}; }
  virtual bool do_time_ops(bool /*on*/) { return false; }
  virtual void do_mark_op_time() {}
  virtual std::vector<double> do_take_op_times() { return {}; }
  virtual std::optional<DeviceCeilings> do_measure_device_ceilings() { return std::nullopt; }
  // How many op calls have begun on this backend (every public op, and each run_replayable before
  // and after its ops). A backend that lets one op leave work for the next (CUDA's norm that
  // quantizes its output for the matmul after it) checks that nothing ran in between: the next
  // op's count is exactly one more.
  uint64_t op_calls() const { return op_calls_; }

 private:
  // Runs `body` between the observers' before_op and after_op (no observer: just body).
  template <typename Body>
  void observed(OpCall& call, Body&& body);

  std::vector<OpObserver*> observers_;
  uint64_t op_calls_ = 0;
  bool in_step_ = false;
  StepMetadata step_;
  // The last ended step's logits, for copy_logit_rows (rows 0 when there are none).
  size_t ended_logit_rows_ = 0;
  int64_t ended_logit_width_ = 0;
};

}  // namespace lumen::backend
