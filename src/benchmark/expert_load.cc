#include "benchmark/expert_load.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "engine/model_state.h"

namespace lumen::benchmark {

std::optional<ExpertLoadCounts> expert_load(const Model& model) {
  const engine::LoadedModel* loaded = engine::model_state(model).model;
  if (loaded == nullptr || !loaded->transformer) return std::nullopt;
  const model::ExpertLoad* load = loaded->transformer->expert_load();
  if (load == nullptr) return std::nullopt;
  ExpertLoadCounts counts{load->layers, load->experts, static_cast<int64_t>(loaded->hparams.expert_used_count),
                          load->tokens, static_cast<int64_t>(loaded->hparams.leading_dense_block_count)};
  if (const model::ExpertParallelFfn* parallel = loaded->transformer->expert_parallel()) {
    counts.ranks = loaded->transformer->expert_shard().size;
    counts.exchanged_bytes = parallel->traffic().bytes;
    counts.exchanged_token_layers = parallel->traffic().token_layers;
    const auto rows = loaded->transformer->attention_rows_per_rank();
    counts.attention_rows_per_rank.assign(rows.begin(), rows.end());
  }
  return counts;
}

std::vector<uint64_t> ExpertLoadCounts::per_rank() const {
  std::vector<uint64_t> out(static_cast<size_t>(std::max(ranks, 1)), 0);
  if (experts <= 0 || experts % static_cast<int64_t>(out.size()) != 0) return out;
  const int64_t per = experts / static_cast<int64_t>(out.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    out[static_cast<size_t>((static_cast<int64_t>(i) % experts) / per)] += tokens[i];
  return out;
}

std::string expert_parallel_summary(const ExpertLoadCounts& load) {
  if (load.ranks <= 1) return {};
  const double per_token_layer = load.exchanged_token_layers > 0 ? static_cast<double>(load.exchanged_bytes) /
                                                                       static_cast<double>(load.exchanged_token_layers)
                                                                 : 0.0;
  std::string out = fmt::format(
      "expert parallelism: {} ranks; routed token-expert pairs per rank [{}]; {} bytes moved between ranks over {} "
      "token-layers ({:.0f} bytes per MoE layer per token)",
      load.ranks, fmt::join(load.per_rank(), ", "), load.exchanged_bytes, load.exchanged_token_layers, per_token_layer);
  if (!load.attention_rows_per_rank.empty()) {
    out += fmt::format("; data-parallel attention rows per rank [{}]", fmt::join(load.attention_rows_per_rank, ", "));
  }
  return out;
}

void reset_expert_load(const Model& model) {
  if (engine::LoadedModel* loaded = engine::model_state(model).model; loaded != nullptr && loaded->transformer) {
    loaded->transformer->reset_expert_load();
  }
}

nlohmann::ordered_json expert_load_json(const ExpertLoadCounts& load) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (int64_t l = 0; l < load.layers; ++l) {
    const auto first = load.tokens.begin() + l * load.experts;
    layers.push_back(std::vector<uint64_t>(first, first + load.experts));
  }
  return {{"layers", load.layers},
          {"experts", load.experts},
          {"experts_per_token", load.experts_per_token},
          {"dense_layers", load.dense_layers},
          {"tokens_per_expert", layers},
          {"expert_parallel_size", load.ranks},
          {"tokens_per_rank", load.per_rank()},
          {"exchanged_bytes", load.exchanged_bytes},
          {"exchanged_token_layers", load.exchanged_token_layers},
          {"attention_rows_per_rank", load.attention_rows_per_rank}};
}

namespace {

struct Summary {
  uint64_t routed = 0, min = 0, max = 0;
  int64_t idle = 0;
  double mean = 0.0;
};

Summary summarize(std::span<const uint64_t> counts) {
  Summary s;
  if (counts.empty()) return s;
  s.min = *std::min_element(counts.begin(), counts.end());
  s.max = *std::max_element(counts.begin(), counts.end());
  for (uint64_t c : counts) {
    s.routed += c;
    if (c == 0) ++s.idle;
  }
  s.mean = static_cast<double>(s.routed) / static_cast<double>(counts.size());
  return s;
}

std::string row(std::string_view label, const Summary& s) {
  return fmt::format("| {:>5} | {:>8} | {:>6} | {:>8.1f} | {:>6} | {:>8.2f} | {:>4} |\n", label, s.routed, s.min,
                     s.mean, s.max, s.mean > 0 ? static_cast<double>(s.max) / s.mean : 0.0, s.idle);
}

}  // namespace

std::string expert_load_table(const ExpertLoadCounts& load, std::string_view what) {
  std::string out =
      fmt::format("\nexpert load, {}: tokens routed to each expert ({} layers x {} experts, {} per token)\n\n", what,
                  load.layers, load.experts, load.experts_per_token);
  out += "| layer |   routed |    min |     mean |    max | max/mean | idle |\n";
  out += "| ----: | -------: | -----: | -------: | -----: | -------: | ---: |\n";
  const int64_t dense = std::clamp<int64_t>(load.dense_layers, 0, load.layers);
  for (int64_t l = 0; l < load.layers; ++l) {
    if (l < dense) {
      out += fmt::format("| {:>5} | {:>8} | {:>6} | {:>8} | {:>6} | {:>8} | {:>4} |\n", l, "dense", "", "", "", "", "");
      continue;
    }
    out += row(
        fmt::format("{}", l),
        summarize(
            std::span(load.tokens).subspan(static_cast<size_t>(l * load.experts), static_cast<size_t>(load.experts))));
  }
  // The whole model's line covers the layers with experts only.
  out += row("all", summarize(std::span(load.tokens).subspan(static_cast<size_t>(dense * load.experts))));
  return out;
}

}  // namespace lumen::benchmark
