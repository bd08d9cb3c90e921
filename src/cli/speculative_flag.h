#pragma once
// --speculative-config JSON, vLLM's flag, shared by run, chat, serve, bench latency and bench
// throughput: {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4,
// "prompt_lookup_min": 2}, {"method": "draft_model", "model": PATH, "num_speculative_tokens": 4},
// {"method": "layer_skip", "num_layers": 8, "num_speculative_tokens": 4},
// {"method": "lookahead", "window_size": 4, "ngram_size": 4, "guess_set_size": 4}, "num_candidates"
// (token trees, ngram and lookahead), plus
// "disable_by_batch_size" (vLLM's too) and "min_acceptance_rate" (Lumen's; include/lumen/engine_config.h has every field's meaning). Anything malformed (not
// JSON, not an object, an unknown key, a wrong type, a value out of range, a method Lumen does
// not have) is a one-line error naming what is wrong.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "lumen/engine.h"
#include "lumen/engine_config.h"

namespace lumen::cli {

inline constexpr const char* kSpeculativeConfigFlag = "--speculative-config";

struct SpeculativeFlag {
  std::string json;
  bool no_jump_forward = false;  // --no-jump-forward (EngineConfig::jump_forward)

  void add_to(CLI::App* cmd);
  bool given() const { return !json.empty(); }
  // Call after parsing: throws lumen::Error for a malformed config.
  SpeculativeConfig config() const {
    return given() ? SpeculativeConfig::from_json(json, kSpeculativeConfigFlag) : SpeculativeConfig{};
  }
};

// What speculation did, from the engine's counters: drafts, draft tokens, accepted tokens, the
// acceptance rate (accepted / draft tokens) and the mean accepted length (1 + accepted / drafts:
// tokens per speculating step), as one line of text and as JSON (bench's output).
std::string speculation_summary(const EngineStats& stats);
nlohmann::ordered_json speculation_json(const EngineStats& stats);

}  // namespace lumen::cli
