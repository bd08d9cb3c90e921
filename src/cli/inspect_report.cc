#include "cli/inspect_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "model/hparams.h"
#include "quantize/quant_mix.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

using nlohmann::ordered_json;

ordered_json hparams_json(const model::HParams& hp) {
  return {
      {"context_length", hp.context_length},
      {"block_count", hp.block_count},
      {"embedding_length", hp.embedding_length},
      {"feed_forward_length", hp.feed_forward_length},
      {"head_count", hp.head_count},
      {"head_count_kv", hp.head_count_kv},
      {"head_dim", hp.head_dim},
      {"vocab_size", hp.vocab_size},
      {"rope_freq_base", hp.rope_freq_base},
      {"rope_dimension_count", hp.rope_dimension_count},
      {"rope_scaling",
       {{"type", hp.rope_scaling.type},
        {"factor", hp.rope_scaling.factor},
        {"original_context_length", hp.rope_scaling.original_context_length}}},
      {"norm_eps", hp.norm_eps},
      {"sliding_window", hp.sliding_window},
  };
}

ordered_json optional_id(const std::optional<int32_t>& id) {
  return id ? ordered_json(*id) : ordered_json(nullptr);
}

ordered_json tokenizer_json(const tokenizer::Vocab& vocab) {
  return {
      {"model", vocab.model_name},
      {"kind", std::string(tokenizer::vocab_kind_name(vocab.kind))},
      {"pre", vocab.pre_tokenizer},
      {"tokens", vocab.size()},
      {"merges", vocab.merges.size()},
      {"bos_id", optional_id(vocab.special.bos)},
      {"eos_id", optional_id(vocab.special.eos)},
      {"add_bos", vocab.special.add_bos},
      {"warnings", vocab.warnings},
  };
}

// general.file_type as llama.cpp names it ("Q4_K_M"), or its number when unknown; null when absent.
ordered_json file_type_json(const gguf::Metadata& md) {
  const auto ftype = md.find_unsigned("general.file_type");
  if (!ftype) return nullptr;
  const auto name = *ftype <= UINT32_MAX ? quantize::mix_name_for_ftype(static_cast<uint32_t>(*ftype)) : std::nullopt;
  return name ? std::string(*name) : fmt::format("file_type {}", *ftype);
}

ordered_json metadata_json(const gguf::Metadata& md) {
  ordered_json list = ordered_json::array();
  for (const auto& [key, value] : md.entries()) {
    list.push_back({{"key", key},
                    {"type", std::string(gguf::value_type_name(value.type()))},
                    {"value", value.to_display_string()}});
  }
  return list;
}

}  // namespace

ordered_json inspect_report(const gguf::GgufFile& file, bool with_metadata) {
  ordered_json report;
  report["file"] = file.source_name();
  report["version"] = file.version();
  report["alignment"] = file.alignment();
  report["data_offset"] = file.data_offset();
  report["file_bytes"] = file.file_size();
  report["metadata_count"] = file.metadata().size();
  const auto& md = file.metadata();
  report["architecture"] = md.find_string("general.architecture").value_or("");
  report["name"] = md.find_string("general.name").value_or("");
  report["file_type"] = file_type_json(md);
  try {
    report["hparams"] = hparams_json(model::read_hparams(file));
  } catch (const Error& e) {
    report["hparams"] = nullptr;
    report["hparams_error"] = e.what();
  }
  // A malformed vocabulary makes the model unusable: that is an error, not a footnote.
  report["tokenizer"] =
      tokenizer::has_vocab(md) ? tokenizer_json(tokenizer::load_vocab(md)) : ordered_json(nullptr);

  ordered_json tensors = ordered_json::array();
  struct Total { uint64_t count = 0, elements = 0, bytes = 0; };
  std::map<std::string, Total> totals;
  uint64_t total_bytes = 0, total_elements = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    std::string type(tensor::dtype_name(t.type));
    tensors.push_back({{"name", t.name}, {"type", type}, {"shape", t.dims},
                       {"elements", t.elements}, {"bytes", t.bytes}, {"offset", t.offset}});
    Total& total = totals[type];
    total.count += 1;
    total.elements += static_cast<uint64_t>(t.elements);
    total.bytes += t.bytes;
    total_bytes += t.bytes;
    total_elements += static_cast<uint64_t>(t.elements);
  }
  report["tensors"] = std::move(tensors);
  ordered_json by_type = ordered_json::array();
  for (const auto& [type, total] : totals) {
    by_type.push_back({{"type", type}, {"count", total.count}, {"elements", total.elements},
                       {"bytes", total.bytes}});
  }
  report["totals_by_type"] = std::move(by_type);
  report["total_elements"] = total_elements;
  report["total_bytes"] = total_bytes;
  if (with_metadata) report["metadata"] = metadata_json(md);
  return report;
}

namespace {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, units[unit]);
}

// Where a tensor goes in the text's table: what comes before the layers (token_embd), the layers
// by number (blk.2 before blk.10, which file order and name order both break), then the rest
// (output_norm, output); the file's order within each.
std::pair<int, long> natural_place(const std::string& name) {
  if (name.rfind("blk.", 0) == 0) return {1, std::strtol(name.c_str() + 4, nullptr, 10)};
  if (name.rfind("output", 0) == 0) return {2, 0};
  return {0, 0};
}

std::string shape_text(const ordered_json& shape) {
  std::string text;
  for (const auto& dim : shape) text += fmt::format("{}{}", text.empty() ? "" : " x ", dim.get<int64_t>());
  return text;
}

}  // namespace

std::string render_inspect_text(const ordered_json& r) {
  std::string out;
  auto line = [&](const std::string& text) { out += text + "\n"; };
  line(fmt::format("file:          {}", r["file"].get<std::string>()));
  line(fmt::format("format:        GGUF v{}, alignment {}, {} metadata keys, {}",
                   r["version"].get<int>(), r["alignment"].get<int>(),
                   r["metadata_count"].get<uint64_t>(), human_bytes(r["file_bytes"].get<uint64_t>())));
  line(fmt::format("architecture:  {}  ({})", r["architecture"].get<std::string>(),
                   r["name"].get<std::string>()));
  if (!r["file_type"].is_null()) line(fmt::format("file type:     {}", r["file_type"].get<std::string>()));
  if (r["hparams"].is_object()) {
    const auto& h = r["hparams"];
    line(fmt::format("context:       {}", h["context_length"].get<uint64_t>()));
    line(fmt::format("layers:        {}", h["block_count"].get<uint64_t>()));
    line(fmt::format("embedding:     {}   feed-forward: {}", h["embedding_length"].get<uint64_t>(),
                     h["feed_forward_length"].get<uint64_t>()));
    line(fmt::format("heads:         {} query, {} key/value, head dim {}",
                     h["head_count"].get<uint64_t>(), h["head_count_kv"].get<uint64_t>(),
                     h["head_dim"].get<uint64_t>()));
    line(fmt::format("vocab:         {}", h["vocab_size"].get<uint64_t>()));
    const auto& rs = h["rope_scaling"];
    line(fmt::format("rope:          base {}, {} dims, scaling {} (factor {})",
                     h["rope_freq_base"].get<double>(), h["rope_dimension_count"].get<uint64_t>(),
                     rs["type"].get<std::string>(), rs["factor"].get<double>()));
    line(fmt::format("norm eps:      {:.6g}", h["norm_eps"].get<double>()));
    if (h["sliding_window"].get<uint64_t>() != 0) {
      line(fmt::format("sliding window: {}", h["sliding_window"].get<uint64_t>()));
    }
  } else if (r.contains("hparams_error")) {
    line(fmt::format("hparams:       unavailable: {}", r["hparams_error"].get<std::string>()));
  }
  if (r["tokenizer"].is_object()) {
    const auto& t = r["tokenizer"];
    line(fmt::format("tokenizer:     {}, pre '{}', {} tokens, {} merges",
                     t["kind"].get<std::string>(), t["pre"].get<std::string>(),
                     t["tokens"].get<uint64_t>(), t["merges"].get<uint64_t>()));
    for (const auto& warning : t["warnings"]) line("  warning: " + warning.get<std::string>());
  } else {
    line("tokenizer:     none");
  }
  line("");
  line(fmt::format("{:<40} {:<8} {:<24} {:>12}", "tensor", "type", "shape", "bytes"));
  std::vector<const ordered_json*> tensors;
  for (const auto& t : r["tensors"]) tensors.push_back(&t);
  std::stable_sort(tensors.begin(), tensors.end(), [](const ordered_json* a, const ordered_json* b) {
    return natural_place((*a)["name"].get<std::string>()) < natural_place((*b)["name"].get<std::string>());
  });
  for (const ordered_json* tensor : tensors) {
    const ordered_json& t = *tensor;
    line(fmt::format("{:<40} {:<8} {:<24} {:>12}", t["name"].get<std::string>(),
                     t["type"].get<std::string>(), shape_text(t["shape"]),
                     t["bytes"].get<uint64_t>()));
  }
  line("");
  line(fmt::format("{:<8} {:>8} {:>16} {:>14}", "type", "tensors", "elements", "size"));
  for (const auto& t : r["totals_by_type"]) {
    line(fmt::format("{:<8} {:>8} {:>16} {:>14}", t["type"].get<std::string>(),
                     t["count"].get<uint64_t>(), t["elements"].get<uint64_t>(),
                     human_bytes(t["bytes"].get<uint64_t>())));
  }
  line(fmt::format("{:<8} {:>8} {:>16} {:>14}", "total", r["tensors"].size(),
                   r["total_elements"].get<uint64_t>(), human_bytes(r["total_bytes"].get<uint64_t>())));
  if (r.contains("metadata")) {
    line("");
    line(fmt::format("{:<44} {:<8} {}", "metadata key", "type", "value"));
    for (const auto& m : r["metadata"]) {
      line(fmt::format("{:<44} {:<8} {}", m["key"].get<std::string>(), m["type"].get<std::string>(),
                       m["value"].get<std::string>()));
    }
  }
  return out;
}

}  // namespace lumen::cli
