#include "quantize/model_facts.h"

#include <cstring>
#include <vector>

#include "quantize/tensor_category.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

// A head count is a u32, or (for models whose layers differ) an array with one per layer;
// llama.cpp's rules look at layer 0.
std::optional<uint64_t> layer0_count(const gguf::Metadata& metadata, const std::string& key) {
  const gguf::Value* value = metadata.find(key);
  if (value == nullptr) return std::nullopt;
  if (value->type() != gguf::ValueType::ARRAY) return metadata.get_unsigned(key);
  const gguf::Array& array = value->as_array();
  if (array.length == 0) fail("{} is an empty array", key);
  if (array.element_type == gguf::ValueType::U32 || array.element_type == gguf::ValueType::I32) {
    uint32_t first = 0;
    std::memcpy(&first, array.raw.data(), sizeof(first));
    return first;
  }
  fail("{} has elements of type {}, expected 32-bit integers", key,
       gguf::value_type_name(array.element_type));
}

// Which (architecture, depth) llama.cpp's loaders call a 70B model.
bool is_70b_model(const std::string& arch, int64_t n_layer, uint64_t n_head, uint64_t n_head_kv) {
  if (arch == "llama") return n_layer == 80 && n_head != n_head_kv;
  if (arch == "qwen2" || arch == "deci" || arch == "olmo") return n_layer == 80;
  if (arch == "jais2") return n_layer == 68;
  return false;
}

}  // namespace

ModelFacts model_facts(const gguf::Metadata& metadata, std::span<const std::string> tensor_names) {
  ModelFacts facts;
  facts.architecture = metadata.get_string("general.architecture");
  const std::string& arch = facts.architecture;
  facts.n_layer = static_cast<int64_t>(metadata.find_unsigned(arch + ".block_count").value_or(0));
  const uint64_t n_head = layer0_count(metadata, arch + ".attention.head_count").value_or(0);
  const uint64_t n_head_kv =
      layer0_count(metadata, arch + ".attention.head_count_kv").value_or(n_head);
  facts.n_gqa = n_head_kv == 0 ? 0 : static_cast<uint32_t>(n_head / n_head_kv);
  facts.n_expert = static_cast<uint32_t>(metadata.find_unsigned(arch + ".expert_count").value_or(0));
  facts.is_70b = is_70b_model(arch, facts.n_layer, n_head, n_head_kv);
  for (const std::string& name : tensor_names) {
    const TensorCategory category = tensor_category(name);
    if (category == TensorCategory::Output) facts.tied_embeddings = false;
    if (is_attention_v_like(category)) ++facts.n_attention_v;
  }
  return facts;
}

ModelFacts read_model_facts(const gguf::GgufFile& file) {
  std::vector<std::string> names;
  names.reserve(file.tensors().size());
  for (const gguf::TensorInfo& tensor : file.tensors()) names.push_back(tensor.name);
  return model_facts(file.metadata(), names);
}

}  // namespace lumen::quantize
