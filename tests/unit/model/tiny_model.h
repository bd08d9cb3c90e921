#pragma once
// Tiny GGUF files built from an architecture's own tensor declarations, for the validation
// tests: every declared tensor (optional ones included) in its declared shape and an allowed
// type, zero-filled, which a test then edits (drops, adds, reshapes, retypes) before writing.
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/writer.h"
#include "model/arch/architecture.h"
#include "model/hparams.h"

namespace lumen::model::testing {

struct TinyTensor {
  std::string name;
  tensor::DType type;
  std::vector<int64_t> dims;
};

// Small, self-consistent hyperparameters: 2 layers, width 64, 4 heads of 16 (2 KV heads); for a
// mixture-of-experts architecture 4 experts of 32, 2 per token, a shared expert of 128; for
// multi-head latent attention a latent of 32 plus 16 rope dims (one cached "KV head"), per-head
// keys of 16 + 16 and values of 16, a dense first layer and one shared expert. `arch` is a
// registered id ("mixtral" gives a llama file with experts).
inline HParams tiny_hparams(const std::string& arch) {
  HParams hp;
  const Architecture* registered = find_architecture(arch);
  hp.architecture = registered != nullptr ? registered->name : arch;
  if (registered != nullptr && registered->features.ffn == FfnKind::MixtureOfExperts) {
    hp.expert_count = 4;
    hp.expert_used_count = 2;
    hp.expert_feed_forward_length = 32;
  }
  hp.context_length = 128;
  hp.embedding_length = 64;
  hp.block_count = 2;
  hp.feed_forward_length = 128;
  hp.head_count = 4;
  hp.head_count_kv = 2;
  hp.head_dim = 16;
  hp.value_dim = 16;
  hp.vocab_size = 256;
  hp.rope_dimension_count = 16;
  if (registered != nullptr && registered->features.attention == AttentionKind::MultiHeadLatent) {
    hp.kv_lora_rank = 32;
    hp.key_length_mla = 32;
    hp.value_length_mla = 16;
    hp.head_count_kv = 1;
    hp.head_dim = hp.kv_lora_rank + hp.rope_dimension_count;
    hp.value_dim = hp.kv_lora_rank;
    hp.leading_dense_block_count = 1;
    hp.expert_shared_count = 1;
  }
  if (registered != nullptr && registered->features.mixer == Mixer::Mamba2) {
    // No attention or FFN: the file says head_count 0 (read as a nominal head), and the SSM
    // keys: kernel 4, inner 128 in 8 heads of 16, state 16, two groups.
    hp.head_count = 0;
    hp.head_count_kv = 0;
    hp.feed_forward_length = 0;
    hp.ssm_conv_kernel = 4;
    hp.ssm_inner_size = 128;
    hp.ssm_state_size = 16;
    hp.ssm_head_count = 8;
    hp.ssm_group_count = 2;
  }
  if (registered != nullptr && registered->features.mixer == Mixer::Rwkv7) {
    // No attention (head_count 0); wkv heads of 16 and LoRA ranks of 8 (gate 16).
    hp.head_count = 0;
    hp.head_count_kv = 0;
    hp.wkv_head_size = 16;
    hp.rwkv_decay_lora = 8;
    hp.rwkv_iclr_lora = 8;
    hp.rwkv_value_lora = 8;
    hp.rwkv_gate_lora = 16;
  }
  return hp;
}

inline std::vector<TinyTensor> declared_tensors(const Architecture& arch, const HParams& hp) {
  std::vector<TinyTensor> out;
  for (const TensorSpec& spec : arch.tensors) {
    const uint64_t copies = spec.per_layer() ? hp.block_count : 1;
    for (uint64_t layer = 0; layer < copies; ++layer) {
      if (spec.per_layer() && !spec.declared_for(hp, layer)) continue;
      const tensor::DType type = spec.role == TensorRole::Matrix ? tensor::DType::F16 : tensor::DType::F32;
      // (a router, TensorRole::Router, stays F32 as llama.cpp's quantizer leaves it)
      out.push_back({spec.file_name(layer), type, spec.dims(hp)});
    }
  }
  return out;
}

// Writes the architecture's tiny model, after `edit` changed its tensor list, and returns its path.
inline std::string write_tiny_model(const std::string& arch_name, const std::string& file_name,
                                    const std::function<void(std::vector<TinyTensor>&)>& edit = {}) {
  const HParams hp = tiny_hparams(arch_name);
  std::vector<TinyTensor> tensors = declared_tensors(*find_architecture(arch_name), hp);
  if (edit) edit(tensors);
  gguf::GgufWriter writer;
  gguf::Metadata& md = writer.metadata();
  auto key = [&](const char* suffix) { return hp.architecture + "." + suffix; };
  md.set("general.architecture", gguf::Value::of_string(hp.architecture));
  if (hp.expert_count != 0) {
    md.set(key("expert_count"), gguf::Value::u32(static_cast<uint32_t>(hp.expert_count)));
    md.set(key("expert_used_count"), gguf::Value::u32(static_cast<uint32_t>(hp.expert_used_count)));
    md.set(key("expert_feed_forward_length"), gguf::Value::u32(static_cast<uint32_t>(hp.expert_feed_forward_length)));
  }
  md.set(key("context_length"), gguf::Value::u32(static_cast<uint32_t>(hp.context_length)));
  md.set(key("embedding_length"), gguf::Value::u32(static_cast<uint32_t>(hp.embedding_length)));
  md.set(key("block_count"), gguf::Value::u32(static_cast<uint32_t>(hp.block_count)));
  md.set(key("feed_forward_length"), gguf::Value::u32(static_cast<uint32_t>(hp.feed_forward_length)));
  md.set(key("attention.head_count"), gguf::Value::u32(static_cast<uint32_t>(hp.head_count)));
  if (hp.head_count != 0)
    md.set(key("attention.head_count_kv"), gguf::Value::u32(static_cast<uint32_t>(hp.head_count_kv)));
  if (hp.ssm_inner_size != 0) {
    for (const auto& [suffix, value] :
         {std::pair{"ssm.conv_kernel", hp.ssm_conv_kernel}, std::pair{"ssm.inner_size", hp.ssm_inner_size},
          std::pair{"ssm.state_size", hp.ssm_state_size}, std::pair{"ssm.time_step_rank", hp.ssm_head_count},
          std::pair{"ssm.group_count", hp.ssm_group_count}}) {
      md.set(key(suffix), gguf::Value::u32(static_cast<uint32_t>(value)));
    }
  }
  md.set(key("vocab_size"), gguf::Value::u32(static_cast<uint32_t>(hp.vocab_size)));
  if (hp.wkv_head_size != 0) {
    for (const auto& [suffix, value] :
         {std::pair{"wkv.head_size", hp.wkv_head_size}, std::pair{"attention.decay_lora_rank", hp.rwkv_decay_lora},
          std::pair{"attention.iclr_lora_rank", hp.rwkv_iclr_lora},
          std::pair{"attention.value_residual_mix_lora_rank", hp.rwkv_value_lora},
          std::pair{"attention.gate_lora_rank", hp.rwkv_gate_lora}}) {
      md.set(key(suffix), gguf::Value::u32(static_cast<uint32_t>(value)));
    }
  }
  if (hp.kv_lora_rank != 0) {
    for (const auto& [suffix, value] :
         {std::pair{"attention.kv_lora_rank", hp.kv_lora_rank}, std::pair{"attention.key_length", hp.head_dim},
          std::pair{"attention.value_length", hp.value_dim}, std::pair{"attention.key_length_mla", hp.key_length_mla},
          std::pair{"attention.value_length_mla", hp.value_length_mla},
          std::pair{"rope.dimension_count", hp.rope_dimension_count},
          std::pair{"leading_dense_block_count", hp.leading_dense_block_count},
          std::pair{"expert_shared_count", hp.expert_shared_count}}) {
      md.set(key(suffix), gguf::Value::u32(static_cast<uint32_t>(value)));
    }
  }
  for (const TinyTensor& t : tensors) {
    writer.add_tensor(t.name, t.type, t.dims, [](std::span<uint8_t> out) { std::fill(out.begin(), out.end(), 0); });
  }
  const std::string path = (std::filesystem::temp_directory_path() / file_name).string();
  writer.write(path);
  return path;
}

}  // namespace lumen::model::testing
