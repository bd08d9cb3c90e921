// SpeculativeConfig::from_json (lumen/engine_config.h): vLLM's speculative_config JSON.
#include "lumen/engine_config.h"

#include <cstdint>
#include <string_view>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace lumen {

namespace {

int32_t integer_field(const nlohmann::json& value, const std::string& key, std::string_view label) {
  if (!value.is_number_integer()) fail("{}: \"{}\" must be an integer, not {}", label, key, value.dump());
  const auto v = value.get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) fail("{}: \"{}\" is out of range ({})", label, key, value.dump());
  return static_cast<int32_t>(v);
}

}  // namespace

SpeculativeConfig SpeculativeConfig::from_json(const std::string& text, std::string_view label) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: not valid JSON ({})", label, e.what());
  }
  if (!j.is_object()) {
    fail("{}: expected a JSON object such as {{\"method\": \"ngram\", \"num_speculative_tokens\": 5}}, not {}", label,
         j.dump());
  }
  SpeculativeConfig c;
  if (!j.contains("method"))
    fail("{}: \"method\" is missing (\"ngram\", \"draft_model\", \"layer_skip\" or \"lookahead\")", label);
  for (const auto& [key, value] : j.items()) {
    if (key == "method") {
      if (!value.is_string()) fail("{}: \"method\" must be a string, not {}", label, value.dump());
      const std::string method = value.get<std::string>();
      if (method == "ngram") {
        c.method = SpeculativeMethod::Ngram;
      } else if (method == "draft_model") {
        c.method = SpeculativeMethod::DraftModel;
      } else if (method == "layer_skip") {
        c.method = SpeculativeMethod::LayerSkip;
      } else if (method == "lookahead") {
        c.method = SpeculativeMethod::Lookahead;
      } else {
        fail(
            "{}: method \"{}\" is not supported (Lumen has \"ngram\", \"draft_model\", \"layer_skip\" "
            "and \"lookahead\")",
            label, method);
      }
    } else if (key == "num_speculative_tokens") {
      c.num_speculative_tokens = integer_field(value, key, label);
    } else if (key == "prompt_lookup_max") {
      c.prompt_lookup_max = integer_field(value, key, label);
    } else if (key == "prompt_lookup_min") {
      c.prompt_lookup_min = integer_field(value, key, label);
    } else if (key == "model") {
      if (!value.is_string())
        fail("{}: \"model\" must be a string (the draft's GGUF path), not {}", label, value.dump());
      c.model = value.get<std::string>();
    } else if (key == "num_layers") {
      c.num_layers = integer_field(value, key, label);
    } else if (key == "window_size") {
      c.window_size = integer_field(value, key, label);
    } else if (key == "ngram_size") {
      c.ngram_size = integer_field(value, key, label);
    } else if (key == "guess_set_size") {
      c.guess_set_size = integer_field(value, key, label);
    } else if (key == "num_candidates") {
      c.num_candidates = integer_field(value, key, label);
    } else if (key == "disable_by_batch_size") {
      c.disable_by_batch_size = integer_field(value, key, label);
    } else if (key == "min_acceptance_rate") {
      if (!value.is_number()) fail("{}: \"min_acceptance_rate\" must be a number, not {}", label, value.dump());
      c.min_acceptance_rate = value.get<double>();
    } else {
      fail(
          "{}: unknown key \"{}\" (known: method, num_speculative_tokens, prompt_lookup_max, prompt_lookup_min, "
          "model, num_layers, window_size, ngram_size, guess_set_size, num_candidates, disable_by_batch_size, "
          "min_acceptance_rate)",
          label, key);
    }
  }
  // Lookahead's draft length follows from its n-gram size.
  if (!j.contains("num_speculative_tokens") && c.method != SpeculativeMethod::Lookahead)
    fail("{}: \"num_speculative_tokens\" is missing", label);
  try {
    c.validate();
  } catch (const Error& e) {
    // validate() names the config itself ("speculative config: ..."); the label says it once.
    std::string_view what = e.what();
    constexpr std::string_view kOwnPrefix = "speculative config: ";
    if (what.substr(0, kOwnPrefix.size()) == kOwnPrefix) what.remove_prefix(kOwnPrefix.size());
    fail("{}: {}", label, what);
  }
  return c;
}

}  // namespace lumen
