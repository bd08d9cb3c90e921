#pragma once
// The decoder-only transformer forward pass over one flat batch: the tokens of every sequence
// in the step, concatenated. Linear layers run once over all of them; attention runs per
// sequence through its block table; logits are computed only for the rows that sample.
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/arch/architecture.h"
#include "model/backend_split.h"
#include "model/context_chunks.h"
#include "model/data_parallel_attention.h"
#include "model/forward_batch.h"
#include "model/hparams.h"
#include "model/kv_cache.h"
#include "model/latent_attention.h"
#include "model/mamba2_mixer.h"
#include "model/rwkv7_block.h"
#include "model/matmul_observer.h"
#include "model/micro_batches.h"
#include "model/moe_ffn.h"
#include "model/pipeline_stage.h"
#include "model/tensor_shard.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace lumen::model {

class Transformer {
 public:
  // With a shard of size > 1 (model/tensor_shard.h): this rank's slice of every layer, whose
  // forward passes run in step with the other ranks' (each all-reduces its partial sums through
  // shard.comm, so every rank calls forward with the same batch); hparams() then gives this
  // rank's heads and FFN columns, and only rank 0 computes logits. Throws lumen::Error for a
  // model that does not split (mixtures of experts, latent attention, heads that do not divide).
  // With a pipeline stage of count > 1 (model/pipeline_stage.h): only the stage's layers run
  // here (the file's other weights stay unread in its mapping), in step with the other stages'
  // processes, which all call forward with the same batch; only rank 0 (stage 0, tensor rank 0)
  // computes logits. hparams() stays the whole model's but for a shard's heads.
  // With a context share of size > 1 (model/context_chunks.h): every rank holds the whole model;
  // a step that prefills one prompt from its start runs on all ranks, each over its two chunks
  // of the prompt (ring attention, transformer_context.cc), and every other step (decodes, later
  // chunks) runs on rank 0 alone, over the cache that the ring filled there. Throws lumen::Error
  // alongside tensor, pipeline or expert parallelism or an active split.
  // With an expert shard (experts.comm set, model/expert_partition.h): this rank binds its share
  // of the routed experts only and every MoE layer exchanges rows with the other ranks, which
  // call forward with the same batch; only rank 0 computes logits. Throws lumen::Error for a
  // model without routed experts, an expert count the ranks do not divide, or alongside tensor or
  // pipeline parallelism.
  // With an active split (model/backend_split.h): the layers from split.first_layer on and the
  // output head on split.second, the rest here, in one forward pass; the KV cache is then built
  // with split() (a model in one process only; not for encoders or state-space layers).
  Transformer(backend::Backend& backend, const gguf::GgufFile& file, const HParams& hp, const TensorShard& shard = {},
              const PipelineStage& stage = {}, const ExpertShard& experts = {}, const ContextShare& context = {},
              const BackendSplit& split = {});
  // Self-speculation's draft (layer skip, LayerSkip / Draft & Verify): the first `n_layers`
  // layers of `target` (1 .. its layers - 1), then its final norm and output head. The weights
  // are the target's own views, nothing copied or uploaded, so `target` must outlive this; the
  // activations (and a mixture of experts' routing counts) are this model's own.
  Transformer(const Transformer& target, uint64_t n_layers);

  // Writes logit_rows.size() rows of vocab_size logits to `logits` (rank 0 of a shard or a
  // pipeline; the other ranks write none). Null: none wanted (a replayed step's).
  void forward(const ForwardBatch& batch, KvCache& cache, float* logits);
  // Host memory for forward()'s logits that the backend writing them (a split model's second
  // part's) copies into fastest: page-locked on a device (Backend::allocate_host).
  std::unique_ptr<backend::Buffer> allocate_logits(size_t bytes);
  // After forward(), until the next: logit rows `rows` that the backend reduced and left
  // unwritten (ForwardBatch::row_forms), each to its place in forward()'s `logits`
  // (Backend::copy_logit_rows).
  void copy_logit_rows(std::span<const int32_t> rows, float* logits);
  // Embeddings: the same pass, but writes the final hidden state (after the output norm, before
  // the output projection) of each of batch.logit_rows, embedding_length values a row, to
  // `hidden`. A model in one process only (throws lumen::Error under tensor or pipeline
  // parallelism, whose ranks would each need to follow the call).
  void forward_hidden(const ForwardBatch& batch, KvCache& cache, float* hidden);

  const HParams& hparams() const { return hp_; }
  const TensorShard& shard() const { return shard_; }
  const PipelineStage& stage() const { return stage_; }
  const ContextShare& context() const { return context_; }
  // The second backend and where it starts (inactive: the whole model runs on one backend).
  const BackendSplit& split() const { return split_; }
  // The layout of this model's KV cache: its layers grouped by window (kv::make_kv_layout), on a
  // pipeline stage keeping only the stage's layers (kv::stage_kv_layout).
  kv::KvLayout kv_layout(bool free_out_of_window) const;
  const Architecture& architecture() const { return arch_; }
  // The weights' views (tests read the token embedding table's rows through the backend).
  const TransformerWeights& weights() const { return weights_; }
  // Context shift: the keys in `blocks` (of every layer) move `delta` positions, rotated with
  // each layer's own rope. The cache must be one group of every layer.
  void shift_keys(KvCache& cache, std::span<const int32_t> blocks, int32_t delta);
  // Importance-based KV eviction: each layer's kept slots gathered head by head from the blocks
  // of src into those of dst (keep: per layer and KV head, the same count each). The cache
  // must be one group of every layer.
  void compact_kv(KvCache& cache, std::span<const int32_t> src, std::span<const int32_t> dst,
                  std::span<const int32_t> keep);
  // Per layer: 0 (full attention) or its sliding window.
  std::span<const int64_t> layer_windows() const { return layer_window_; }
  // The longest sequence this model will run (the engine's max_model_len), before its first
  // step. Phi-3's LongRoPE rotates with its long factors when that passes the original context
  // and with its short ones otherwise, as llama.cpp chooses by its n_ctx (0, the default: short).
  // A model without the two factor sets ignores it.
  void set_context_length(int64_t tokens);
  bool uses_long_rope_factors() const { return long_rope_; }
  // Tokens routed to each expert of each layer since the last reset; null for a dense model.
  const ExpertLoad* expert_load() const;
  // Expert parallelism's exchange (its traffic, this rank's experts); null otherwise.
  const ExpertParallelFfn* expert_parallel() const { return moe_ ? moe_->expert_parallel() : nullptr; }
  const ExpertShard& expert_shard() const { return experts_; }
  void reset_expert_load();
  // Data-parallel attention (model/data_parallel_attention.h), rank 0: the rows of attention
  // (tokens) each rank ran since the last reset_expert_load; empty otherwise.
  std::span<const uint64_t> attention_rows_per_rank() const { return attention_rows_per_rank_; }
  // Activation studies: `observer` (or null to stop) sees every layer matmul's input
  // (model/matmul_observer.h), mixture-of-experts FFNs' included (moe_ffn.h). Throws
  // lumen::Error for latent attention, which runs its matmuls inside its own code.
  void set_matmul_observer(MatmulObserver* observer);
  // Whether forward hands `batch`'s ops to Backend::run_replayable (a decode step whose ops
  // depend only on its shape, device memory and the step's metadata: transformer.cc says which).
  bool replayable(const ForwardBatch& batch) const;

 private:
  struct Activations;
  // The part of a split model that runs on its second backend: layers [layers.first,
  // layers.end) and the output head (model/transformer_split.cc).
  struct OffloadPart {};
  Transformer(OffloadPart, backend::Backend& backend, const gguf::GgufFile& file, const HParams& hp, LayerRange layers);
  // The first backend's share of a split model's weights, and the second's part built.
  void bind_split(const gguf::GgufFile& file, const BackendSplit& split);
  // The seam: the first n rows of the hidden state copied into the second part's (one copy).
  void hand_over(int64_t n);
  // Every layer of the pass: this part's, then the second part's after the seam. Returns the
  // part that holds the last hidden states and the output head.
  Transformer& run_all_layers(const ForwardBatch& batch, KvCache& cache, int64_t n);
  // What both constructors do once the weights are bound: rope, attention and layer settings.
  void init();
  void init_rope();  // rope_ and rope_local_, with the factors context_length_ picks
  void ensure_capacity(int64_t n_tokens, int64_t n_logit_rows);
  // The first n rows of s_.x become the tokens' embeddings, but for the rows `given` covers,
  // which take its vectors (model/embedding_spans.h).
  void embed(std::span<const int32_t> tokens, int64_t n, std::span<const EmbeddingSpan> given);
  // An encoder's whole pass (model/encoder.cc): its embeddings and layers over the batch's n
  // tokens, leaving the final hidden states in the first n rows of s_.x.
  void encode(const ForwardBatch& batch, int64_t n);
  // This process's layers over the first n rows of s_.x.
  void run_layers(const ForwardBatch& batch, KvCache& cache, int64_t n);
  // Final norm and output head over the first n_out rows of s_.logit_h, into `out` (the
  // step's logits: backend::Backend::step_logits).
  void output_head(int64_t n_out, backend::TensorView out);
  // What a forward pass over `batch` hands the backend at its step boundary (backend.h).
  backend::StepMetadata step_metadata(const ForwardBatch& batch, const KvCache& cache, float* logits) const;
  // forward's checks of the batch against the cache and the vocabulary.
  void check_batch(const ForwardBatch& batch, const KvCache& cache) const;
  // A pipeline stage's share of a forward pass, micro-batch by micro-batch.
  void forward_pipelined(const ForwardBatch& batch, KvCache& cache, float* logits);
  // Context parallelism (transformer_context.cc): whether the ranks share this step (one
  // sequence's prefill from position 0, of at least two rows per rank), and the shared step.
  bool shares_context(const ForwardBatch& batch, KvCache& cache) const;
  // Throws lumen::Error for what context parallelism does not run (the constructor's check).
  void require_context_parallel() const;
  void forward_context_parallel(const ForwardBatch& batch, KvCache& cache, float* logits);
  // Ring attention of this rank's rows (in s_.q, s_.k, s_.v) over every rank's keys, into s_.attn.
  void ring_attention(size_t layer, const ForwardBatch& batch, KvCache& cache, const ContextChunks& mine,
                      int64_t n_prompt);
  // The attention block (transformer_attention.cc). Its parts before and after attending: the
  // normed input's Q, K and V (with rope at `positions` and the query scale) into s_.q, s_.k,
  // s_.v; then the output projection of s_.attn into s_.h (summed over a shard, post-normed). With `store`, the roped keys and the
  // values also go into that cache in the same op as the rope (rope_store_kv); without, the
  // caller stores them. `input_normed`: h already holds the normed input (the previous layer's
  // residual add normed it: mlp_block's next_attn_norm).
  struct KvStore {
    std::span<const backend::SequenceSlice> sequences;
    backend::KvLayer* cache = nullptr;
  };
  void attention_inputs(size_t layer, std::span<const int32_t> positions, int64_t n, const KvStore* store = nullptr,
                        bool input_normed = false);
  void attend(size_t layer, const backend::TensorView& q_heads, backend::KvLayer& kv,
              std::span<const backend::SequenceSlice> sequences, const backend::AttentionConfig& attention,
              std::span<const ForwardBatch::ScoreRequest> scores, backend::TensorView& out);
  void attention_output(size_t layer, int64_t n);
  // A layer's two halves. The attention block leaves its output in the scratch h; the MLP block
  // adds it to the residual x as it norms x (add_rms_norm where the backend has it). With
  // next_attn_norm (the next layer's attention norm), the MLP block's own residual add norms x
  // into h the same way and returns true: the next attention block then starts from h
  // (input_normed), one launch fewer a layer on a GPU.
  void attention_block(size_t layer, const ForwardBatch& batch, KvCache& cache, int64_t n, bool input_normed = false);
  bool mlp_block(size_t layer, int64_t n, const backend::TensorView* next_attn_norm = nullptr);
  // x += branch, and with next_norm (and the backend's add_rms_norm) also h = rms_norm(x): true
  // when it normed.
  bool residual_add(const backend::TensorView& branch, int64_t n, const backend::TensorView* next_norm);
  // The next layer's attention norm when this layer's residual add can norm into it (same code
  // path, RMS norms, a backend with add_rms_norm), else null.
  const backend::TensorView* fusable_next_attn_norm(size_t layer) const;
  // A Mamba 2 block: norm, mixer, residual add (no FFN).
  // A Mamba 2 layer's norm and mixer: h becomes the branch output, x is left for the add.
  void mamba2_mix(size_t layer, const ForwardBatch& batch, int64_t n);
  // The final norm of the rows picked for logits: RMS, or RWKV's LayerNorm with a bias.
  void final_norm(backend::TensorView& picked);
  // Fused matrices read as their parts (transformer_fused_weights.cc): a QKV matrix as wq, wk,
  // wv (and its bias as bq, bk, bv), Phi-3's gate-up matrix as ffn_gate and ffn_up.
  void split_fused_matrices();
  // LayerNorm decoders (BLOOM, transformer_layer_norm.cc): a norm that is RMS or LayerNorm as
  // the architecture says; the plain GELU FFN of the normed h into h.
  void block_norm(const backend::TensorView& x, const backend::TensorView& weight,
                  const std::optional<backend::TensorView>& bias, backend::TensorView& out);
  void gelu_ffn(const LayerWeights& w, backend::TensorView& h, backend::TensorView& up);
  // A row-parallel projection's output, summed over the ranks of a shard (nothing alone).
  void reduce_over_shard(const backend::TensorView& partial);
  void observe(const backend::TensorView& weight, const backend::TensorView& input) {
    if (observer_ != nullptr) observer_->on_matmul(weight, input);
  }

  backend::Backend& backend_;
  HParams hp_;
  const Architecture& arch_;
  TensorShard shard_;
  PipelineStage stage_;
  ExpertShard experts_;
  ContextShare context_;
  LayerRange layers_;  // the layers this process runs: all but on a pipeline stage
  TransformerWeights weights_;
  backend::RopeConfig rope_;        // global layers
  backend::RopeConfig rope_local_;  // sliding-window layers (the same unless per_layer_rope_base)
  backend::AttentionConfig attention_;
  float query_scale_ = 1.0f;  // queries times this before attention (features.query_scale)
  // Granite's multipliers (BlockFeatures::granite_multipliers; 1: none).
  float embedding_scale_ = 1.0f, residual_scale_ = 1.0f, logit_divisor_ = 1.0f;
  float logit_softcap_ = 0.0f;  // 0: none; else logits become c tanh(logit / c) (Gemma 2)
  int64_t context_length_ = 0;  // set_context_length's; picks Phi-3's LongRoPE factor set
  bool long_rope_ = false;
  bool rope_enabled_ = true;
  // Whether the layer's queries and keys are rotated: rope on, and not one of the architecture's
  // NoPE layers (BlockFeatures::no_rope_period).
  bool layer_rotates(size_t layer) const {
    const uint32_t period = arch_.features.no_rope_period;
    return rope_enabled_ && (period == 0 || (layer + 1) % period != 0);
  }
  std::vector<int64_t> layer_window_;  // per layer: 0 (global) or the sliding window
  std::unique_ptr<MoeFfn> moe_;        // the FFN of a mixture-of-experts architecture
  std::unique_ptr<LatentAttention> latent_;  // the attention of a multi-head latent architecture
  std::unique_ptr<Mamba2Mixer> mamba2_;      // the mixer of a state-space architecture
  std::unique_ptr<Rwkv7Block> rwkv7_;        // every block of an RWKV 7 model
  MatmulObserver* observer_ = nullptr;
  BackendSplit split_;
  std::unique_ptr<Transformer> offload_;  // a split model's second part (null: none)
  mutable ExpertLoad merged_load_;        // a split mixture of experts: both parts' counts
  // Data-parallel attention (transformer_dp_attention.cc): this rank's rows of the step through
  // the model, then every rank's logit rows (and its traffic and expert load) to rank 0.
  void forward_data_parallel(const ForwardBatch& batch, KvCache& cache, float* logits);
  void gather_logits(float* logits);
  bool in_rank_rows_ = false;        // inside forward_data_parallel's own forward
  std::vector<RankRows> rank_rows_;  // each rank's share of the step
  std::vector<float> own_logits_;    // this rank's logit rows
  std::vector<std::byte> gather_out_, gather_in_;
  std::vector<uint64_t> attention_rows_per_rank_;
  MicroBatchInput micro_;        // the micro-batch being run (pipeline parallelism)
  std::vector<float> returned_;  // rank 0: the last stage's hidden states of the logit rows
  struct RingBuffers;            // context parallelism's blocks in flight (transformer_context.cc)
  std::shared_ptr<RingBuffers> ring_;

  int64_t capacity_tokens_ = 0;
  int64_t capacity_logit_rows_ = 0;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  struct Scratch {
    backend::TensorView x, h, q, k, v, attn, gate, up, logit_h;
  } s_;
};

}  // namespace lumen::model
