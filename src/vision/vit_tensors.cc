// The ViT tower's tensors as llama.cpp's converters name them (CLIP through the legacy LLaVA
// converter, SigLIP through convert_hf_to_gguf.py --mmproj): one layout, in which CLIP has the
// class embedding and the pre-LayerNorm, SigLIP the patch bias and (Gemma 3, Idefics3) the
// post-LayerNorm. The FFN's up and down matrices are told apart by shape where their names are
// swapped (vision_weights.cc).
#include "vision/vision_weights.h"

namespace lumen::vision {

std::vector<VisionTensorSpec> vit_tensor_specs() {
  using enum VDim;
  using enum VRole;
  using W = VisionWeights;
  using L = VisionLayer;
  constexpr bool optional = false;
  return {
      {"v.patch_embd.weight", {PatchSize, PatchSize, Channels, Embd}, Conv, true, &W::patch},
      {"v.patch_embd.bias", {Embd}, Vector, optional, &W::patch_b},
      {"v.class_embd", {Embd}, Vector, optional, &W::class_embd},
      {"v.position_embd.weight", {Embd, Positions}, Table, true, &W::position},
      {"v.pre_ln.weight", {Embd}, Vector, optional, &W::pre_ln_w},
      {"v.pre_ln.bias", {Embd}, Vector, optional, &W::pre_ln_b},
      {"v.blk.{}.ln1.weight", {Embd}, Vector, true, &L::ln1_w},
      {"v.blk.{}.ln1.bias", {Embd}, Vector, true, &L::ln1_b},
      {"v.blk.{}.attn_q.weight", {Embd, Embd}, Matrix, true, &L::q},
      {"v.blk.{}.attn_q.bias", {Embd}, Vector, optional, &L::q_b},
      {"v.blk.{}.attn_k.weight", {Embd, Embd}, Matrix, true, &L::k},
      {"v.blk.{}.attn_k.bias", {Embd}, Vector, optional, &L::k_b},
      {"v.blk.{}.attn_v.weight", {Embd, Embd}, Matrix, true, &L::v},
      {"v.blk.{}.attn_v.bias", {Embd}, Vector, optional, &L::v_b},
      {"v.blk.{}.attn_out.weight", {Embd, Embd}, Matrix, true, &L::o},
      {"v.blk.{}.attn_out.bias", {Embd}, Vector, optional, &L::o_b},
      {"v.blk.{}.ln2.weight", {Embd}, Vector, true, &L::ln2_w},
      {"v.blk.{}.ln2.bias", {Embd}, Vector, true, &L::ln2_b},
      {"v.blk.{}.ffn_up.weight", {Embd, FeedForward}, Matrix, true, &L::up},
      {"v.blk.{}.ffn_up.bias", {FeedForward}, Vector, optional, &L::up_b},
      {"v.blk.{}.ffn_down.weight", {FeedForward, Embd}, Matrix, true, &L::down},
      {"v.blk.{}.ffn_down.bias", {Embd}, Vector, optional, &L::down_b},
      {"v.post_ln.weight", {Embd}, Vector, optional, &W::post_ln_w},
      {"v.post_ln.bias", {Embd}, Vector, optional, &W::post_ln_b},
  };
}

}  // namespace lumen::vision
