#pragma once
// One tensor an architecture declares: its GGUF name, its shape as a function of the
// hyperparameters, the element types it may have, whether a file may leave it out, and where
// the weight binder puts it. The binder, the loader's validation and `lumen synth` all read
// these declarations, so a tensor is named in exactly one place: its architecture's file.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "tensor/dtype.h"

namespace lumen::model {

// A dimension, named rather than computed, so the declaration stays data and error messages can
// say which hyperparameter a shape came from.
enum class Dim {
  Embedding,
  Vocab,
  QWidth,
  KvWidth,
  FeedForward,
  HeadDim,
  RopePairs,
  Experts,            // expert_count
  ExpertFeedForward,  // one routed expert's FFN width (hparams.h: expert_ffn_width)
  SharedFeedForward,  // the shared expert's FFN width (shared_expert_ffn_width)
  // DeepSeek: expert_shared_count shared experts of one expert's width, run as one FFN.
  SharedExpertsFeedForward,
  // Multi-head latent attention (hparams.h: is_mla).
  Heads,           // head_count
  QLoraRank,       // the query bottleneck
  KvLoraRank,      // the latent
  LatentKeyWidth,  // what the cache holds per position: latent + rope key
  MlaQWidth,       // head_count x key_length_mla
  MlaNopeDim,      // key_length_mla - rope dims: the part of a head's key that the latent makes
  MlaValueDim,     // value_length_mla
  MlaOutWidth,     // head_count x value_length_mla
  // Encoders (BERT).
  Positions,    // context_length: one learned embedding per position
  TokenTypes,   // token_type_count
  QkvWidth,     // q, k and v fused (nomic-bert): head_dim x (heads + 2 x KV heads)
  GateUpWidth,  // the FFN's gate and up fused in one matrix (phi3's ffn_up): 2 x feed_forward_length
  // State-space layers (Mamba 2; hparams.h's ssm_* fields).
  One,              // a size-1 dimension (llama.cpp stores A and D as {1, heads})
  SsmInProj,        // ssm_in_proj_width: z, x, B, C and dt
  SsmConvKernel,    // ssm_conv_kernel
  SsmConvChannels,  // ssm_conv_channels: x, B and C
  SsmInner,         // ssm_inner_size
  SsmHeads,         // ssm_head_count
  SsmGroups,        // ssm_group_count
  SsmGroupWidth,    // ssm_inner_size / ssm_group_count: what one group's RMS norm spans
  // RWKV 7 (hparams.h's rwkv_* fields): the LoRA ranks, and the 6 token-shift mixes of the time
  // mix (r, w, k, v, a, g) stored as one tensor.
  RwkvDecayLora,
  RwkvIclrLora,
  RwkvValueLora,
  RwkvGateLora,
  RwkvMixes,
};

// What a tensor is for: decides the element types allowed (matrices go through the backend's
// matmul and get_rows, which read every weight type; the rest are read as plain floats) and how
// `lumen synth` fills it.
enum class TensorRole {
  Matrix,       // any weight type the kernels read (2-D, or 3-D: one matrix per expert)
  Router,       // a MoE router's weights: any matrix type, but llama.cpp's quantizer keeps them
                // F32, and so does `lumen synth`
  Norm,         // F32, values near 1
  Bias,         // F32, small values
  RopeFactors,  // F32, per-pair frequency divisors (synth computes them from the preset)
  SsmDecay,     // F32, Mamba's A = -exp(A_log) per head: negative (synth: -1 .. -16)
  SsmConv,      // F32, a depthwise convolution's taps (synth: wider than a bias, as trained ones)
};

// Whether a file may leave the tensor out, and when `lumen synth` writes it.
enum class Presence {
  Required,
  Untied,       // absent when the output projection reuses the embedding matrix
  RopeScaling,  // present only with llama3-style frequency scaling
  LongRope,     // Phi-3's LongRoPE factor sets: in long-context files only
  Optional,     // a file may have it or not (`lumen synth` writes none)
};

// Where the binder stores a tensor: a member of the model's weights or of each layer's.
using TensorSlot =
    std::variant<backend::TensorView TransformerWeights::*, std::optional<backend::TensorView> TransformerWeights::*,
                 backend::TensorView LayerWeights::*, std::optional<backend::TensorView> LayerWeights::*>;

struct TensorSpec {
  std::string name;        // per-layer tensors without their "blk.N." prefix
  std::vector<Dim> shape;  // ggml order: {row length, rows} (then experts, for 3-D tensors)
  TensorRole role = TensorRole::Matrix;
  Presence presence = Presence::Required;
  TensorSlot slot;
  // Per-layer tensors: the layers that have this one (null: every layer). DeepSeek's leading
  // dense layers have an FFN where the others have experts; its query matrix is one or two.
  bool (*in_layer)(const HParams& hp, uint64_t layer) = nullptr;

  bool per_layer() const { return slot.index() >= 2; }
  bool declared_for(const HParams& hp, uint64_t layer) const { return in_layer == nullptr || in_layer(hp, layer); }
  bool optional() const { return presence != Presence::Required; }
  // The name in the file: "blk.{layer}.{name}" for per-layer tensors.
  std::string file_name(uint64_t layer) const;
  std::vector<int64_t> dims(const HParams& hp) const;
  bool allows(tensor::DType type) const;
};

// Shorthands for the architecture files.
TensorSpec model_tensor(std::string name, std::vector<Dim> shape, TensorRole role, Presence presence, TensorSlot slot);
TensorSpec layer_tensor(std::string name, std::vector<Dim> shape, TensorRole role, TensorSlot slot);
// The same, for the layers `in_layer` accepts only, and optional there when presence says so.
TensorSpec layer_tensor_if(bool (*in_layer)(const HParams&, uint64_t), std::string name, std::vector<Dim> shape,
                           TensorRole role, TensorSlot slot, Presence presence = Presence::Required);

int64_t dim_value(Dim dim, const HParams& hp);

}  // namespace lumen::model
