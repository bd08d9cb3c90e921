#pragma once
// Checking a SpeculativeConfig (include/lumen/engine_config.h) and making its proposer.
#include <memory>

#include "lumen/engine_config.h"
#include "spec/proposer.h"

namespace lumen::spec {

// The longest draft a step may carry: each drafted token is a row of the forward pass and of
// logits, and past a few tokens even a perfect proposer gains little per extra row.
inline constexpr int32_t kMaxSpeculativeTokens = 64;

// Lookahead's defaults (W, N, G), and bounds that keep the window's extra rows (W * (N - 1) - 1
// per step) and the pool small.
inline constexpr int32_t kDefaultLookaheadWindow = 4;
inline constexpr int32_t kDefaultLookaheadNgram = 4;
inline constexpr int32_t kDefaultLookaheadGuesses = 4;
inline constexpr int32_t kMaxLookaheadWindow = 16;
inline constexpr int32_t kMaxLookaheadNgram = 8;
inline constexpr int32_t kMaxLookaheadGuesses = 16;
// Candidates merged into one token tree at most.
inline constexpr int32_t kMaxCandidates = 8;

// The config with vLLM's defaults filled in (prompt lookup bounds); throws lumen::Error, one
// line naming the field, when it is out of range.
SpeculativeConfig resolved(const SpeculativeConfig& config);

// The n-gram and lookahead proposers; nullptr when speculation is off, and for the methods that need the
// target model (draft_model, layer_skip: engine/draft_proposers.h). `config` must be resolved.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);

}  // namespace lumen::spec
