#pragma once
// The sampling flags every generating command shares (`lumen run`, `lumen chat`). Their defaults
// are SamplingParams' own (include/lumen/sampling_params.h): the one set the server and the
// Python package use too (docs/sampling-defaults.md), so the same prompt samples alike
// everywhere unless a flag says otherwise.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "lumen/sampling_params.h"
#include "util/error.h"

namespace lumen::cli {

// "TOKEN=BIAS", e.g. "15043=-2.5" or "2=-inf" (a ban), into params.logit_bias.
inline void parse_logit_bias(const std::string& spec, SamplingParams& params) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    fail("--logit-bias wants TOKEN=BIAS (e.g. 15043=-2.5 or 2=-inf), got '{}'", spec);
  }
  const std::string token_text = spec.substr(0, eq), bias_text = spec.substr(eq + 1);
  char* end = nullptr;
  errno = 0;
  const long token = std::strtol(token_text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || token < 0 || token > INT32_MAX) {
    fail("--logit-bias: '{}' is not a token id", token_text);
  }
  const float bias = std::strtof(bias_text.c_str(), &end);
  if (*end != '\0') fail("--logit-bias: '{}' is not a number", bias_text);
  params.logit_bias[static_cast<int32_t>(token)] = bias;
}

// --seed: -1 asks for a random seed (llama.cpp's meaning), 0..2^64-1 is the seed; anything
// else is an error naming the flag (CLI11 alone would read -1 as 2^64-1 and saturate larger
// values, both silently fixed seeds).
inline std::optional<uint64_t> parse_seed_flag(const std::string& text) {
  if (text == "-1") return std::nullopt;
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
  if (!digits || errno == ERANGE || *end != '\0') {
    fail("--seed must be -1 (a random seed) or an integer from 0 to 18446744073709551615, not '{}'", text);
  }
  return static_cast<uint64_t>(value);
}

// Stop strings are added by add_stop_option, for the commands that honour them.
inline void add_sampling_options(CLI::App* cmd, SamplingParams& params) {
  cmd->add_option("--temp", params.temperature, "Temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", params.top_k, "Top-k (0: off)")->capture_default_str();
  cmd->add_option("--top-p", params.top_p, "Top-p (1: off)")->capture_default_str();
  cmd->add_option("--min-p", params.min_p, "Min-p (0: off)")->capture_default_str();
  cmd->add_option("--typical-p", params.typical_p, "Typical-p (1: off)")->capture_default_str();
  cmd->add_option(
         "--repeat-penalty", params.repetition_penalty,
         "Repetition penalty over the last --repeat-last-n tokens of prompt and output (1: off)")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", params.frequency_penalty,
                  "Frequency penalty over the output tokens in that window (0: off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", params.presence_penalty,
                  "Presence penalty over the output tokens in that window (0: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", params.penalty_last_n,
                  "Penalty window in tokens (-1: all, 0: off)")
      ->capture_default_str();
  cmd->add_option_function<std::vector<std::string>>(
         "--logit-bias",
         [&params](const std::vector<std::string>& specs) {
           for (const std::string& spec : specs) parse_logit_bias(spec, params);
         },
         "TOKEN=BIAS added to the token's logit (-inf bans it); repeatable")
      ->allow_extra_args(false);
  cmd->add_option_function<std::string>(
      "--seed", [&params](const std::string& text) { params.seed = parse_seed_flag(text); },
      "Random seed, 0 to 2^64-1 (default, or -1: a random one); choice i of --completions / --best-of "
      "draws from a mix of the seed and i");
}

inline void add_stop_option(CLI::App* cmd, SamplingParams& params) {
  cmd->add_option("--stop", params.stop, "Stop string: the output ends just before it; repeatable")
      ->allow_extra_args(false);
}

}  // namespace lumen::cli
