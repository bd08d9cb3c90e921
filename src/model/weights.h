#pragma once
// The tensors of a transformer, bound from a GGUF file by its architecture's declarations
// (model/arch/tensor_spec.h) and made usable by a backend. The whole file is validated against
// the declarations before anything is uploaded, so a file with a missing, extra or wrong tensor
// fails at load with the tensor's name rather than producing garbage at run time.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "gguf/file.h"
#include "model/hparams.h"

namespace lumen::model {

struct Architecture;
struct TensorSpec;
class ShardBytes;

// A tensor's bytes as the backend receives them: the file's, or a slice of them
// (model/tensor_shard.h).
struct HostTensor {
  tensor::DType type;
  std::vector<int64_t> dims;  // ggml order, as gguf::TensorInfo::dims
  const void* data = nullptr;
};

struct LayerWeights {
  backend::TensorView attn_norm;
  backend::TensorView wq, wk, wv, wo;  // wk and wv stay empty under latent attention
  std::optional<backend::TensorView> bq, bk, bv;  // qwen2
  std::optional<backend::TensorView> q_norm, k_norm;  // QK-norm: one weight per head dimension
  std::optional<backend::TensorView> attn_post_norm;  // on the attention output, before the add
  backend::TensorView ffn_norm;
  backend::TensorView ffn_gate, ffn_up, ffn_down;
  std::optional<backend::TensorView> ffn_post_norm;  // on the FFN output, before the add
  // Mixture of experts (instead of ffn_gate/up/down): the router {embedding, experts}; the
  // experts' matrices as 3-D tensors, one 2-D matrix per expert ({embedding, expert ff,
  // experts} for gate and up, {expert ff, embedding, experts} for down); a shared expert that
  // every token passes through, scaled by sigmoid(gate_inp_shexp . x) when it has that gate.
  std::optional<backend::TensorView> ffn_gate_inp;
  std::optional<backend::TensorView> ffn_gate_exps, ffn_up_exps, ffn_down_exps;
  std::optional<backend::TensorView> ffn_gate_inp_shexp;
  std::optional<backend::TensorView> ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp;
  std::optional<backend::TensorView> ffn_exp_probs_b;  // DeepSeek-V3: a bias on expert selection only
  // gpt-oss: the router's bias {experts} (added to its logits), the experts' biases ({expert ff,
  // experts} for gate and up, {embedding, experts} for down), and the attention sinks {heads}.
  std::optional<backend::TensorView> ffn_gate_inp_b, ffn_gate_exps_b, ffn_up_exps_b, ffn_down_exps_b;
  std::optional<backend::TensorView> attn_sinks;
  // Multi-head latent attention (DeepSeek-V2/V3): the query through a bottleneck (wq_a, its norm,
  // wq_b) or one matrix (wq above); the latent plus rope key (wkv_a_mqa) and the latent's norm;
  // per head, the latent to key (wk_b, {nope, rank, heads}: applied to queries, "absorbed")
  // and latent to value (wv_b, {rank, value, heads}) matrices.
  std::optional<backend::TensorView> wq_a, q_a_norm, wq_b;
  std::optional<backend::TensorView> wkv_a_mqa, kv_a_norm, wk_b, wv_b;
  // Encoders (BERT): the output projection's and the FFN's biases, and the biases of the two
  // LayerNorms after the residual adds, whose weights are attn_norm and ffn_norm.
  std::optional<backend::TensorView> bo, ffn_up_b, ffn_down_b, attn_norm_b, ffn_norm_b;
  // nomic-bert, BLOOM: q, k and v as one matrix {embedding, q + k + v widths}, in that order,
  // and BLOOM's bias of it. A decoder reads them through wq, wk, wv and bq, bk, bv, views of
  // their rows (Transformer::split_fused_matrices).
  std::optional<backend::TensorView> wqkv, bqkv;
  // Phi-3: the FFN's gate and up as one matrix {embedding, 2 x ff}, gate rows first; read through
  // ffn_gate and ffn_up, views of its rows (split_fused_gate_up).
  std::optional<backend::TensorView> ffn_gate_up;
  // Mamba 2 (instead of attention and FFN; attn_norm is the block's norm): the input projection
  // {embedding, z + x + B + C + dt}, the depthwise convolution's taps {kernel, channels} and
  // bias, dt's bias and A (negative, {1, heads}) and D ({1, heads}) per head, the gated RMS
  // norm's weight {inner / groups, groups} and the output projection {inner, embedding}.
  std::optional<backend::TensorView> ssm_in, ssm_conv1d, ssm_conv1d_b, ssm_dt_b, ssm_a, ssm_d, ssm_norm, ssm_out;
  // RWKV 7 (model/rwkv7_block.h; its LayerNorms are attn_norm/attn_norm_b before the time mix
  // and ffn_norm/ffn_norm_b before the channel mix, its r, k, v and output matrices wq, wk, wv
  // and wo, the channel mix's key and value ffn_up and ffn_down): the decay (w), in-context
  // learning rate (a), value-residual (v) and gate (g) LoRAs, the token-shift mixes {embedding,
  // 1, 1, 6} and the channel mix's, k_k, k_a and r_k, and the group norm after the wkv.
  std::optional<backend::TensorView> rwkv_w0, rwkv_w1, rwkv_w2, rwkv_a0, rwkv_a1, rwkv_a2, rwkv_v0, rwkv_v1, rwkv_v2;
  std::optional<backend::TensorView> rwkv_g1, rwkv_g2, rwkv_mixes, rwkv_k_k, rwkv_k_a, rwkv_r_k, rwkv_ln_x, rwkv_ln_x_b,
      rwkv_ffn_mix;
};

struct TransformerWeights {
  backend::TensorView token_embd;
  backend::TensorView output_norm;
  std::optional<backend::TensorView> output;      // absent when the model ties it to token_embd
  std::optional<backend::TensorView> rope_freqs;  // llama3-style per-pair divisors
  // Phi-3's LongRoPE: per-pair divisors for contexts past the original one, and for those
  // within it (Transformer::set_context_length picks one, as llama.cpp picks by its n_ctx).
  std::optional<backend::TensorView> rope_factors_long, rope_factors_short;
  // Encoders (BERT): learned absolute positions {embedding, context}, token types {embedding,
  // types} (every input is type 0), and the LayerNorm (weight, bias) after the embeddings. An
  // encoder has no output norm or head: output_norm stays empty.
  std::optional<backend::TensorView> position_embd, token_types, token_embd_norm, token_embd_norm_b;
  std::optional<backend::TensorView> output_norm_b;  // a LayerNorm's bias (BLOOM, RWKV 7)
  std::vector<LayerWeights> layers;
  // A tensor-parallel shard's slices of the file's tensors, which its views point into (CPU).
  std::shared_ptr<ShardBytes> shard_bytes;
  // The bytes of every tensor bound: the whole file's, or what a shard or an expert-parallel
  // rank holds of it (its share of the experts; `lumen run --verbose` reports it).
  uint64_t bound_bytes = 0;

  const backend::TensorView& output_matrix() const { return output ? *output : token_embd; }
};

// Throws lumen::Error naming the tensor when one the architecture requires is missing, when the
// file holds one the architecture does not declare (blocks beyond block_count, say: llama.cpp
// refuses those too), or when a shape or an element type is not the declared one.
void validate_tensors(const gguf::GgufFile& file, const Architecture& arch, const HParams& hp);

// What to upload for a tensor of the file (validated against its spec): a shard's slice.
// `layer`: the block a per-layer tensor belongs to (0 for the model's own tensors).
using TensorSource = std::function<HostTensor(const TensorSpec& spec, const gguf::TensorInfo& info, uint64_t layer)>;

// Which declared tensors a backend receives, by file name and (for a per-layer tensor, else 0)
// layer: a model split over two backends binds each its share (model/backend_split.h).
using TensorFilter = std::function<bool(const std::string& name, bool per_layer, uint64_t layer)>;

// validate_tensors, then every declared tensor the file holds (that `wanted` keeps, when given)
// uploaded to the backend: its bytes in the file, or what `source` gives for it when there is one.
TransformerWeights bind_weights(const gguf::GgufFile& file, const Architecture& arch, const HParams& hp,
                                backend::Backend& backend, const TensorSource& source = {},
                                const TensorFilter& wanted = {});

}  // namespace lumen::model
