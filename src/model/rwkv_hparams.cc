// RWKV 7's hyperparameters as llama.cpp's converter writes them: {arch}.wkv.head_size, the LoRA
// ranks ({arch}.attention.decay_lora_rank, iclr_lora_rank, value_residual_mix_lora_rank,
// gate_lora_rank) and {arch}.token_shift_count, with attention.head_count 0 (no attention).
#include "model/hparams.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// Heads of 64 are what RWKV 7 ships; 256 is far beyond, and keeps the per-sequence state (a
// head_size x head_size matrix per head, embedding x head_size values a layer) a sane size.
constexpr uint64_t kMaxWkvHeadSize = 256;
constexpr uint64_t kMaxRwkvWidth = uint64_t{1} << 16;

void require_rwkv_range(const std::string& key, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) fail("{} = {} is out of range (expected {}..{})", key, value, min, max);
}

}  // namespace

void read_rwkv_hparams(const gguf::Metadata& md, const std::string& prefix, HParams& hp) {
  auto key = [&](const char* suffix) { return prefix + suffix; };
  const std::optional<uint64_t> head_size = md.find_unsigned(key("wkv.head_size"));
  if (!head_size) return;
  hp.wkv_head_size = *head_size;
  hp.rwkv_decay_lora = md.get_unsigned(key("attention.decay_lora_rank"));
  hp.rwkv_iclr_lora = md.get_unsigned(key("attention.iclr_lora_rank"));
  hp.rwkv_value_lora = md.get_unsigned(key("attention.value_residual_mix_lora_rank"));
  hp.rwkv_gate_lora = md.find_unsigned(key("attention.gate_lora_rank")).value_or(0);
  // The state holds one shifted row for the time mix and one for the channel mix: RWKV 6 and 7
  // both write 2, and llama.cpp asserts it.
  const uint64_t shifts = md.find_unsigned(key("token_shift_count")).value_or(2);
  if (shifts != 2) fail("{} = {} (RWKV 7 shifts 2 rows per layer)", key("token_shift_count"), shifts);
  if (hp.head_count == 0) {
    hp.attention_free = true;
    hp.head_count = 1;  // set_nominal_attention finishes the nominal head
  }
}

void validate_rwkv(const HParams& hp, const std::string& prefix) {
  if (!has_rwkv(hp)) return;
  require_rwkv_range(prefix + "wkv.head_size", hp.wkv_head_size, 1, kMaxWkvHeadSize);
  require_rwkv_range(prefix + "embedding_length", hp.embedding_length, 1, kMaxRwkvWidth);
  if (hp.embedding_length % hp.wkv_head_size != 0) {
    fail("{}wkv.head_size = {} does not divide {}embedding_length = {}", prefix, hp.wkv_head_size, prefix,
         hp.embedding_length);
  }
  require_rwkv_range(prefix + "attention.decay_lora_rank", hp.rwkv_decay_lora, 1, hp.embedding_length);
  require_rwkv_range(prefix + "attention.iclr_lora_rank", hp.rwkv_iclr_lora, 1, hp.embedding_length);
  require_rwkv_range(prefix + "attention.value_residual_mix_lora_rank", hp.rwkv_value_lora, 1, hp.embedding_length);
  // llama.cpp's rwkv7 requires the gate's tensors, so a rank of 0 cannot describe a file it runs.
  require_rwkv_range(prefix + "attention.gate_lora_rank", hp.rwkv_gate_lora, 1, hp.embedding_length);
  if (has_ssm(hp)) fail("a file with both {}wkv.head_size and {}ssm.inner_size", prefix, prefix);
}

}  // namespace lumen::model
