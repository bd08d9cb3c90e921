#pragma once
// The sampling flags every generating command shares (`lumen run`, `lumen chat`).
#include <CLI/CLI.hpp>

#include "sampling/sampler.h"

namespace lumen::cli {

inline void add_sampling_options(CLI::App* cmd, sampling::SamplingParams& params) {
  cmd->add_option("--temp", params.temperature, "Temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", params.top_k, "Top-k (0: off)")->capture_default_str();
  cmd->add_option("--top-p", params.top_p, "Top-p (1: off)")->capture_default_str();
  cmd->add_option("--seed", params.seed, "Random seed")->capture_default_str();
}

}  // namespace lumen::cli
