#include "quantize/tensor_category.h"

#include <array>
#include <string_view>

namespace lumen::quantize {
namespace {

bool contains(std::string_view name, std::string_view part) {
  return name.find(part) != std::string_view::npos;
}

bool ends_with(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

// Name fragments of tensors llama-quantize never quantizes: routers and routing tables, tiny
// per-model extras (Gemma 3n's altup/laurel, MiniMax's indexer projections), convolutions of
// state-space models, RWKV's small 2-D mixing weights, T5's relative position bias and the
// position-like tensors of multimodal encoders.
using namespace std::string_view_literals;

constexpr std::array kNeverQuantized = {
    "_norm.weight"sv,
    "ffn_gate_inp.weight"sv,
    "ffn_gate_tid2eid.weight"sv,
    "altup"sv,
    "laurel"sv,
    "per_layer_model_proj"sv,
    "ssm_conv1d"sv,
    "shortconv.conv.weight"sv,
    "indexer.k_proj.weight"sv,
    "indexer.q_proj.weight"sv,
    "time_mix_first.weight"sv,
    "time_mix_w0.weight"sv,
    "time_mix_w1.weight"sv,
    "time_mix_w2.weight"sv,
    "time_mix_v0.weight"sv,
    "time_mix_v1.weight"sv,
    "time_mix_v2.weight"sv,
    "time_mix_a0.weight"sv,
    "time_mix_a1.weight"sv,
    "time_mix_a2.weight"sv,
    "time_mix_g1.weight"sv,
    "time_mix_g2.weight"sv,
    "time_mix_decay_w1.weight"sv,
    "time_mix_decay_w2.weight"sv,
    "time_mix_lerp_fused.weight"sv,
    "attn_rel_b.weight"sv,
    ".position_embd"sv,
    "sam.pos_embd"sv,
    "sam.neck."sv,
    "sam.net_"sv,
    ".rel_pos"sv,
    ".patch_embd"sv,
    ".patch_merger"sv,
    "a.rvq.codebook"sv,
    "mm.a.code_embd"sv,
};

}  // namespace

TensorCategory tensor_category(std::string_view name) {
  if (name == "output.weight") return TensorCategory::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return TensorCategory::TokenEmbedding;
  }
  // Substring tests in llama.cpp's order: "attn_qkv.weight" must win over "attn_v.weight"...
  if (contains(name, "attn_qkv.weight")) return TensorCategory::AttentionQkv;
  if (contains(name, "attn_kv_b.weight")) return TensorCategory::AttentionKvB;
  if (contains(name, "attn_v.weight")) return TensorCategory::AttentionV;
  if (contains(name, "attn_k.weight")) return TensorCategory::AttentionK;
  if (contains(name, "attn_q.weight")) return TensorCategory::AttentionQ;
  if (contains(name, "attn_output.weight")) return TensorCategory::AttentionOutput;
  // ...and these match experts and shared experts too (ffn_down_exps, ffn_up_shexp).
  if (contains(name, "ffn_up")) return TensorCategory::FfnUp;
  if (contains(name, "ffn_gate")) return TensorCategory::FfnGate;
  if (contains(name, "ffn_down")) return TensorCategory::FfnDown;
  return TensorCategory::Other;
}

bool is_attention_v_like(TensorCategory category) {
  return category == TensorCategory::AttentionV || category == TensorCategory::AttentionQkv ||
         category == TensorCategory::AttentionKvB;
}

int effective_dims(std::span<const int64_t> dims) {
  for (int i = static_cast<int>(dims.size()) - 1; i >= 1; --i) {
    if (dims[static_cast<size_t>(i)] > 1) return i + 1;
  }
  return 1;
}

bool allows_quantization(std::string_view name, std::span<const int64_t> dims,
                         bool quantize_output) {
  if (effective_dims(dims) < 2) return false;
  if (!ends_with(name, "weight")) return false;
  if (!quantize_output && name == "output.weight") return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  for (std::string_view part : kNeverQuantized) {
    if (contains(name, part)) return false;
  }
  return true;
}

}  // namespace lumen::quantize
