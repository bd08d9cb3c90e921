#pragma once
// The expert-load histogram of a mixture-of-experts model for `lumen bench`: how many tokens
// the router sent to each expert of each layer during a measurement, as a markdown table (per
// layer: least, mean and most loaded expert, the imbalance max/mean, experts left idle) and as
// JSON (every count). A balanced router gives each expert tokens x experts-per-token / experts.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lumen/model.h"

namespace lumen::benchmark {

struct ExpertLoadCounts {
  int64_t layers = 0;
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  std::vector<uint64_t> tokens;  // [layer * experts + expert]
  int64_t dense_layers = 0;      // leading layers with a dense FFN (DeepSeek): no experts there
  // Expert parallelism (1 rank: none): the ranks sharing the experts (equal contiguous ranges)
  // and the bytes their all-to-alls moved between different ranks, over the token-layers (a
  // token through one MoE layer) they served.
  int ranks = 1;
  uint64_t exchanged_bytes = 0;
  uint64_t exchanged_token_layers = 0;
  // Data-parallel attention (empty: off): the rows (tokens) of attention each rank ran.
  std::vector<uint64_t> attention_rows_per_rank = {};  // "= {}": aggregate inits may leave it out

  // Routed token-expert pairs that went to each rank's experts, over all layers.
  std::vector<uint64_t> per_rank() const;
};

// The counts since the last reset; nullopt for a dense model.
std::optional<ExpertLoadCounts> expert_load(const Model& model);
void reset_expert_load(const Model& model);

// {"layers", "experts", "experts_per_token", "dense_layers", "tokens_per_expert": [[per expert]
// per layer]}
nlohmann::ordered_json expert_load_json(const ExpertLoadCounts& load);
// A heading naming `what` was measured, then the per-layer table and the whole model's line.
std::string expert_load_table(const ExpertLoadCounts& load, std::string_view what);
// Expert parallelism's line for `lumen run`: the pairs each rank's experts took and the bytes
// moved per MoE layer per token; empty in one process.
std::string expert_parallel_summary(const ExpertLoadCounts& load);

}  // namespace lumen::benchmark
