#include "quantize/tensor_type_rules.h"

#include <fmt/format.h>

#include "quantize/quantize_order.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

using tensor::DType;

int64_t block_elements(DType type) { return tensor::dtype_info(type).block_elements; }

// The layers llama.cpp favours with more bits: the first and last eighth, and every third one
// in between.
bool use_more_bits(int layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

}  // namespace

TensorTypePlanner::TensorTypePlanner(ModelFacts facts, TypeChoiceOptions options)
    : facts_(std::move(facts)), options_(options) {}

DType TensorTypePlanner::choose(std::string_view name, DType current,
                                std::span<const int64_t> dims) {
  if (!allows_quantization(name, dims)) return current;
  const TensorCategory category = tensor_category(name);
  if (options_.token_embedding_type && category == TensorCategory::TokenEmbedding) {
    return *options_.token_embedding_type;
  }
  if (options_.output_tensor_type && category == TensorCategory::Output) {
    return *options_.output_tensor_type;
  }
  const DType default_type = mix_info(options_.mix).default_type;
  if (!is_quantized(default_type)) return default_type;  // F32/F16/BF16: no rules, no fallback
  DType type = default_type;
  if (!options_.pure) type = mix_rule(name, category, type, dims);
  return fallback(name, dims[0], type);
}

DType TensorTypePlanner::mix_rule(std::string_view name, TensorCategory category, DType type,
                                  std::span<const int64_t> dims) {
  const bool falcon = facts_.architecture == "falcon";
  if (category == TensorCategory::Output ||
      (facts_.tied_embeddings && category == TensorCategory::TokenEmbedding)) {
    if (options_.output_tensor_type) return *options_.output_tensor_type;
    if (falcon || dims[0] % block_elements(type) != 0) return DType::Q8_0;
    return type == DType::Q8_0 ? type : DType::Q6_K;
  }
  switch (category) {
    case TensorCategory::TokenEmbedding: return type;  // no mix here changes it
    case TensorCategory::AttentionV:
    case TensorCategory::AttentionQkv:
    case TensorCategory::AttentionKvB: return attention_v_rule(type);
    case TensorCategory::AttentionK: return facts_.n_expert == 8 ? DType::Q8_0 : type;
    case TensorCategory::FfnDown: return ffn_down_rule(name, type);
    case TensorCategory::AttentionOutput: return attention_output_rule(type);
    case TensorCategory::FfnGate:
      layer_of(name, i_ffn_gate_++);  // only checks the name, as llama.cpp does
      return type;
    case TensorCategory::FfnUp:
      layer_of(name, i_ffn_up_++);
      return type;
    default: return type;
  }
}

DType TensorTypePlanner::attention_v_rule(DType type) {
  const int i = i_attention_v_++;
  switch (options_.mix) {
    case Mix::Q2_K: type = facts_.n_gqa >= 4 ? DType::Q4_K : DType::Q3_K; break;
    case Mix::Q3_K_M: type = i < 2 ? DType::Q5_K : DType::Q4_K; break;
    case Mix::Q3_K_L: type = DType::Q5_K; break;
    case Mix::Q4_K_M:
    case Mix::Q5_K_M:
      if (use_more_bits(i, facts_.n_attention_v)) type = DType::Q6_K;
      break;
    case Mix::Q4_K_S:
      if (i < 4) type = DType::Q5_K;
      break;
    case Mix::IQ4_NL:
    case Mix::IQ4_XS:
      if (facts_.n_gqa >= 4) type = DType::Q5_K;
      break;
    default: break;
  }
  // A 70B model's V is 8x smaller than Q (8 query heads per KV head): more bits cost little.
  if (facts_.is_70b && (type == DType::Q3_K || type == DType::Q4_K)) type = DType::Q5_K;
  if (facts_.n_expert == 8) type = DType::Q8_0;
  return type;
}

DType TensorTypePlanner::ffn_down_rule(std::string_view name, DType type) {
  const int layer = layer_of(name, i_ffn_down_++);
  const int64_t n = facts_.n_layer;
  const bool falcon = facts_.architecture == "falcon";
  switch (options_.mix) {
    case Mix::Q2_K: return DType::Q3_K;
    case Mix::Q3_K_M:
      if (layer < n / 16) return DType::Q5_K;
      return !falcon || use_more_bits(layer, n) ? DType::Q4_K : DType::Q3_K;
    case Mix::Q3_K_L: return falcon ? DType::Q4_K : DType::Q5_K;
    case Mix::Q4_K_M:
      if (falcon) {
        if (layer < n / 16) return DType::Q6_K;
        return use_more_bits(layer, n) ? DType::Q5_K : DType::Q4_K;
      }
      return use_more_bits(layer, n) ? DType::Q6_K : type;
    case Mix::Q5_K_M: return use_more_bits(layer, n) ? DType::Q6_K : type;
    case Mix::Q4_K_S: return !falcon && layer < n / 8 ? DType::Q5_K : type;
    // With an importance matrix only: the first eighth of FFN down gets the offset variant,
    // which llama.cpp found steadier there (without one its files stay as they always were).
    case Mix::Q4_0: return options_.has_imatrix && layer < n / 8 ? DType::Q4_1 : type;
    case Mix::Q5_0: return options_.has_imatrix && layer < n / 8 ? DType::Q5_1 : type;
    // Without an importance matrix the first eighth of FFN down keeps more bits.
    case Mix::IQ4_NL:
    case Mix::IQ4_XS: return !options_.has_imatrix && layer < n / 8 ? DType::Q5_K : type;
    default: return type;
  }
}

DType TensorTypePlanner::attention_output_rule(DType type) const {
  const Mix mix = options_.mix;
  if (facts_.architecture == "falcon") return mix == Mix::Q3_K_L ? DType::Q4_K : type;
  if (facts_.n_expert == 8) {
    const bool low_bit = mix == Mix::Q2_K || mix == Mix::Q3_K_S || mix == Mix::Q3_K_M || mix == Mix::Q4_K_S ||
                         mix == Mix::Q4_K_M || mix == Mix::IQ4_NL || mix == Mix::IQ4_XS;
    return low_bit ? DType::Q5_K : type;
  }
  switch (mix) {
    case Mix::Q2_K: return DType::Q3_K;
    case Mix::Q3_K_M: return DType::Q4_K;
    case Mix::Q3_K_L: return DType::Q5_K;
    default: return type;
  }
}

// The layer a per-layer rule applies to: the running count of such tensors for dense models;
// for mixtures of experts (whose expert tensors need not come in layer order) the block number
// in the name, as llama.cpp reads it.
int TensorTypePlanner::layer_of(std::string_view name, int counter) const {
  if (facts_.n_expert <= 1) return counter;
  const std::optional<int> layer = block_number(name);
  if (!layer) fail("cannot tell the layer of tensor '{}' (expected a 'blk.N.' name)", name);
  if (*layer < 0 || *layer >= facts_.n_layer) {
    fail("tensor '{}' names layer {}, but the model has {} layers", name, *layer, facts_.n_layer);
  }
  return *layer;
}

DType TensorTypePlanner::fallback(std::string_view name, int64_t columns, DType type) {
  if (columns % block_elements(type) == 0) return type;
  DType chosen = type;
  switch (type) {
    case DType::Q2_K:
    case DType::Q3_K: chosen = DType::Q4_0; break;
    case DType::Q4_K: chosen = DType::Q5_0; break;
    case DType::Q5_K: chosen = DType::Q5_1; break;
    case DType::Q6_K: chosen = DType::Q8_0; break;
    case DType::IQ4_XS: chosen = DType::IQ4_NL; break;
    default: break;  // a 32-element type has no smaller block to fall back to
  }
  if (columns % block_elements(chosen) != 0) chosen = DType::F16;
  fallbacks_.push_back(fmt::format("{}: {} columns are not whole blocks of {}, using {}", name,
                                   columns, tensor::dtype_name(type), tensor::dtype_name(chosen)));
  return chosen;
}

}  // namespace lumen::quantize
