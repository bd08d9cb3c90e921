#include "model/hparams.h"

#include "util/error.h"

namespace lumen::model {

HParams read_hparams(const gguf::GgufFile& file) {
  const gguf::Metadata& md = file.metadata();
  HParams hp;
  hp.architecture = md.get_string("general.architecture");
  hp.name = md.find_string("general.name").value_or("");
  const std::string prefix = hp.architecture + ".";
  auto key = [&](const char* suffix) { return prefix + suffix; };

  hp.context_length = md.get_unsigned(key("context_length"));
  hp.embedding_length = md.get_unsigned(key("embedding_length"));
  hp.block_count = md.get_unsigned(key("block_count"));
  hp.feed_forward_length = md.find_unsigned(key("feed_forward_length")).value_or(0);
  hp.head_count = md.get_unsigned(key("attention.head_count"));
  if (hp.head_count == 0) fail("{} is 0", key("attention.head_count"));
  hp.head_count_kv = md.find_unsigned(key("attention.head_count_kv")).value_or(hp.head_count);
  if (hp.head_count_kv == 0 || hp.head_count % hp.head_count_kv != 0) {
    fail("{} = {} does not divide {} query heads", key("attention.head_count_kv"),
         hp.head_count_kv, hp.head_count);
  }
  hp.head_dim = md.find_unsigned(key("attention.key_length"))
                    .value_or(hp.embedding_length / hp.head_count);
  hp.value_dim = md.find_unsigned(key("attention.value_length")).value_or(hp.head_dim);

  if (auto n = md.find_unsigned(key("vocab_size"))) {
    hp.vocab_size = *n;
  } else if (const auto* tokens = md.find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING)) {
    hp.vocab_size = tokens->length;
  }

  hp.rope_freq_base = md.find_float(key("rope.freq_base")).value_or(10000.0);
  hp.rope_dimension_count = md.find_unsigned(key("rope.dimension_count")).value_or(hp.head_dim);
  hp.rope_scaling.type = md.find_string(key("rope.scaling.type")).value_or("none");
  hp.rope_scaling.factor = md.find_float(key("rope.scaling.factor")).value_or(1.0);
  hp.rope_scaling.original_context_length =
      md.find_unsigned(key("rope.scaling.original_context_length")).value_or(0);

  if (auto eps = md.find_float(key("attention.layer_norm_rms_epsilon"))) {
    hp.norm_eps = *eps;
  } else if (auto eps_ln = md.find_float(key("attention.layer_norm_epsilon"))) {
    hp.norm_eps = *eps_ln;
  }
  hp.sliding_window = md.find_unsigned(key("attention.sliding_window")).value_or(0);
  return hp;
}

}  // namespace lumen::model
