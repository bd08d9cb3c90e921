#include "prune/prune_model.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "gguf/file.h"
#include "gguf/value.h"
#include "gguf/writer.h"
#include "util/error.h"

namespace lumen::prune {

namespace {

// The layer of a tensor named blk.<n>.<rest>, and the <rest>; nullopt for other tensors.
std::optional<std::pair<uint64_t, std::string_view>> layer_of(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kPrefix.size());
  uint64_t layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.') return std::nullopt;
  return std::pair{layer, rest.substr(static_cast<size_t>(end - rest.data()) + 1)};
}

// An integer of the same GGUF type as `like` (block_count is u32 in llama.cpp's files, but the
// reader takes any integer type: keep what the input chose).
gguf::Value same_type_integer(const gguf::Value& like, uint64_t v) {
  const gguf::ValueType t = like.type();
  if (t == gguf::ValueType::I8 || t == gguf::ValueType::I16 || t == gguf::ValueType::I32 || t == gguf::ValueType::I64) {
    return gguf::Value::of_signed(t, static_cast<int64_t>(v));
  }
  return gguf::Value::of_unsigned(t, v);
}

// The kept layers' entries of a per-layer array.
gguf::Value kept_entries(const gguf::Array& in, const std::vector<uint64_t>& keep) {
  gguf::Array out;
  out.element_type = in.element_type;
  out.length = keep.size();
  if (!in.strings.empty()) {
    for (uint64_t layer : keep) out.strings.push_back(in.strings[layer]);
  } else if (!in.arrays.empty()) {
    for (uint64_t layer : keep) out.arrays.push_back(in.arrays[layer]);
  } else {
    const size_t width = in.length == 0 ? 0 : in.raw.size() / in.length;
    for (uint64_t layer : keep) {
      const auto at = in.raw.begin() + static_cast<std::ptrdiff_t>(layer * width);
      out.raw.insert(out.raw.end(), at, at + static_cast<std::ptrdiff_t>(width));
    }
  }
  return gguf::Value::of_array(std::move(out));
}

void check_keep(const std::vector<uint64_t>& keep, uint64_t n_layers, const gguf::Metadata& md, const std::string& arch) {
  if (keep.empty()) fail("prune: keep at least one layer");
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] >= n_layers) fail("prune: layer {} does not exist (the model has layers 0 to {})", keep[i], n_layers - 1);
    if (i > 0 && keep[i] <= keep[i - 1]) fail("prune: the kept layers must be ascending and distinct");
  }
  const bool prefix = keep.back() + 1 == keep.size();
  if (!prefix && md.find_unsigned(arch + ".attention.sliding_window").value_or(0) != 0) {
    fail("prune: this {} model has sliding-window layers, whose pattern follows the layer numbers: keep a prefix "
         "(--keep-layers) rather than a list with gaps",
         arch);
  }
}

}  // namespace

PruneReport prune_model(const std::string& in_path, const std::string& out_path, const std::vector<uint64_t>& keep) {
  const gguf::GgufFile input = gguf::GgufFile::open(in_path);
  const gguf::Metadata& md = input.metadata();
  if (md.find_unsigned("split.count").value_or(1) > 1) {
    fail("{} is one part of a split model; merge it first (llama-gguf-split --merge)", in_path);
  }
  const std::optional<std::string> arch = md.find_string("general.architecture");
  if (!arch) fail("{}: no general.architecture: not a model file", in_path);
  const std::string block_key = *arch + ".block_count";
  const gguf::Value* blocks = md.find(block_key);
  if (blocks == nullptr) fail("{}: no {}: a model without layers cannot be pruned", in_path, block_key);
  PruneReport report;
  report.layers_in = md.get_unsigned(block_key);
  report.layers_out = keep.size();
  check_keep(keep, report.layers_in, md, *arch);

  gguf::GgufWriter writer(input.alignment());
  gguf::Metadata& out_md = writer.metadata();
  out_md = md;
  out_md.set(block_key, same_type_integer(*blocks, keep.size()));
  for (const auto& [key, value] : md.entries()) {
    if (!key.starts_with(*arch + ".") || value.type() != gguf::ValueType::ARRAY) continue;
    if (value.as_array().length != report.layers_in) continue;
    out_md.set(key, kept_entries(value.as_array(), keep));
    report.per_layer_keys.push_back(key);
  }
  const std::string dense_key = *arch + ".leading_dense_block_count";
  if (const gguf::Value* dense = md.find(dense_key)) {
    const uint64_t n_dense = md.get_unsigned(dense_key);
    const auto kept_dense = static_cast<uint64_t>(std::count_if(keep.begin(), keep.end(), [&](uint64_t l) { return l < n_dense; }));
    out_md.set(dense_key, same_type_integer(*dense, kept_dense));
  }

  // Input layer -> output layer.
  std::vector<int64_t> renumbered(report.layers_in, -1);
  for (size_t i = 0; i < keep.size(); ++i) renumbered[keep[i]] = static_cast<int64_t>(i);
  report.tensors_in = input.tensors().size();
  for (const gguf::TensorInfo& t : input.tensors()) {
    report.bytes_in += t.bytes;
    std::string name = t.name;
    if (const auto layer = layer_of(t.name)) {
      if (layer->first >= report.layers_in) {
        fail("{}: tensor {} belongs to no layer of the {} the metadata declares", in_path, t.name, report.layers_in);
      }
      const int64_t out_layer = renumbered[layer->first];
      if (out_layer < 0) continue;
      name = "blk." + std::to_string(out_layer) + "." + std::string(layer->second);
    }
    ++report.tensors_out;
    report.bytes_out += t.bytes;
    const gguf::TensorInfo* source = &t;
    writer.add_tensor(std::move(name), t.type, t.dims, [source](std::span<uint8_t> out) {
      std::copy(source->data, source->data + source->bytes, out.begin());
    });
  }
  writer.write(out_path);
  return report;
}

}  // namespace lumen::prune
