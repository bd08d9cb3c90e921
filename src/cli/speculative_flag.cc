#include "cli/speculative_flag.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace lumen::cli {

namespace {

constexpr const char* kFlag = "--speculative-config";

int32_t integer_field(const nlohmann::json& value, const std::string& key) {
  if (!value.is_number_integer()) fail("{}: \"{}\" must be an integer, not {}", kFlag, key, value.dump());
  const auto v = value.get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) fail("{}: \"{}\" is out of range ({})", kFlag, key, value.dump());
  return static_cast<int32_t>(v);
}

}  // namespace

SpeculativeConfig parse_speculative_config(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: not valid JSON ({})", kFlag, e.what());
  }
  if (!j.is_object()) {
    fail("{}: expected a JSON object such as {{\"method\": \"ngram\", \"num_speculative_tokens\": 5}}, not {}", kFlag,
         j.dump());
  }
  SpeculativeConfig c;
  if (!j.contains("method")) fail("{}: \"method\" is missing (\"ngram\", \"draft_model\" or \"layer_skip\")", kFlag);
  for (const auto& [key, value] : j.items()) {
    if (key == "method") {
      if (!value.is_string()) fail("{}: \"method\" must be a string, not {}", kFlag, value.dump());
      const std::string method = value.get<std::string>();
      if (method == "ngram") {
        c.method = SpeculativeMethod::Ngram;
      } else if (method == "draft_model") {
        c.method = SpeculativeMethod::DraftModel;
      } else if (method == "layer_skip") {
        c.method = SpeculativeMethod::LayerSkip;
      } else {
        fail("{}: method \"{}\" is not supported (Lumen has \"ngram\", \"draft_model\" and \"layer_skip\"; "
             "lookahead is to come)", kFlag, method);
      }
    } else if (key == "num_speculative_tokens") {
      c.num_speculative_tokens = integer_field(value, key);
    } else if (key == "prompt_lookup_max") {
      c.prompt_lookup_max = integer_field(value, key);
    } else if (key == "prompt_lookup_min") {
      c.prompt_lookup_min = integer_field(value, key);
    } else if (key == "model") {
      if (!value.is_string()) fail("{}: \"model\" must be a string (the draft's GGUF path), not {}", kFlag, value.dump());
      c.model = value.get<std::string>();
    } else if (key == "num_layers") {
      c.num_layers = integer_field(value, key);
    } else if (key == "disable_by_batch_size") {
      c.disable_by_batch_size = integer_field(value, key);
    } else if (key == "min_acceptance_rate") {
      if (!value.is_number()) fail("{}: \"min_acceptance_rate\" must be a number, not {}", kFlag, value.dump());
      c.min_acceptance_rate = value.get<double>();
    } else {
      fail("{}: unknown key \"{}\" (known: method, num_speculative_tokens, prompt_lookup_max, prompt_lookup_min, "
           "model, num_layers, disable_by_batch_size, min_acceptance_rate)", kFlag, key);
    }
  }
  if (!j.contains("num_speculative_tokens")) fail("{}: \"num_speculative_tokens\" is missing", kFlag);
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", kFlag, e.what());
  }
  return c;
}

namespace {

double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }

}  // namespace

std::string speculation_summary(const EngineStats& s) {
  return fmt::format("speculative decoding: {} drafts, {} of {} draft tokens accepted ({:.1f}%), mean accepted length {:.2f}",
                     s.spec_drafts, s.spec_accepted_tokens, s.spec_draft_tokens,
                     100.0 * ratio(s.spec_accepted_tokens, s.spec_draft_tokens),
                     1.0 + ratio(s.spec_accepted_tokens, s.spec_drafts));
}

nlohmann::ordered_json speculation_json(const EngineStats& s) {
  return {{"num_drafts", s.spec_drafts},
          {"num_draft_tokens", s.spec_draft_tokens},
          {"num_accepted_tokens", s.spec_accepted_tokens},
          {"acceptance_rate", ratio(s.spec_accepted_tokens, s.spec_draft_tokens)},
          {"mean_accepted_length", 1.0 + ratio(s.spec_accepted_tokens, s.spec_drafts)}};
}

void SpeculativeFlag::add_to(CLI::App* cmd) {
  cmd->add_option(kFlag, json,
                  "Speculative decoding, vLLM's JSON: '{\"method\": \"ngram\", \"num_speculative_tokens\": 5, "
                  "\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}'");
  cmd->add_flag("--no-jump-forward", no_jump_forward,
                "Structured output: decode the text a grammar forces token by token instead of verifying it "
                "in one pass (the output is the same)");
}

}  // namespace lumen::cli
