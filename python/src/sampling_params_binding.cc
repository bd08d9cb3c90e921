// lumen.SamplingParams and lumen.StructuredOutputsParams: include/lumen/sampling_params.h under
// vLLM's keyword names. Constructing one checks it (SamplingParams::validate), so a bad value
// fails where it is written, with Lumen's message, as ValueError (lumen.LumenError).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "engine_options.h"
#include "lumen/error.h"
#include "lumen/sampling_params.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace lumen::python {

namespace {

// vLLM accepts one stop string or a list of them.
std::vector<std::string> stop_strings(const nb::handle& stop) {
  if (stop.is_none()) return {};
  if (nb::isinstance<nb::str>(stop)) return {nb::cast<std::string>(stop)};
  if (nb::isinstance<nb::bytes>(stop) || !nb::hasattr(stop, "__iter__")) {
    throw nb::type_error("stop must be a string or a list of strings");
  }
  std::vector<std::string> out;
  for (nb::handle item : stop) {
    if (!nb::isinstance<nb::str>(item)) throw nb::type_error("stop must be a string or a list of strings");
    out.push_back(nb::cast<std::string>(item));
  }
  return out;
}

// A JSON Schema given as a dict (vLLM accepts either) is passed on as its JSON text.
std::optional<std::string> schema_text(const nb::handle& json) {
  if (json.is_none()) return std::nullopt;
  if (nb::isinstance<nb::str>(json)) return nb::cast<std::string>(json);
  if (!nb::isinstance<nb::dict>(json)) throw nb::type_error("json must be a JSON Schema as a dict or a string");
  return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(json));
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += fmt::format("{}{:?}", i ? ", " : "", items[i]);
  return out + "]";
}

template <typename T>
std::string optional_text(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : "None";
}

constexpr const char* kSamplingDoc =
    "How tokens are chosen and when generation stops (vLLM's SamplingParams; Lumen's meaning of each\n"
    "field is in include/lumen/sampling_params.h). Every argument is keyword-only; construction\n"
    "checks the values and raises ValueError (lumen.LumenError) naming the first bad one, or\n"
    "TypeError for a value of the wrong type.\n\n"
    "n: completions per prompt. best_of: sequences sampled, the n with the best mean log-probability\n"
    "returned. temperature: 0 is greedy. top_p, top_k (0 or -1: off), min_p, typical_p: filters.\n"
    "repetition_penalty, frequency_penalty, presence_penalty over the last penalty_last_n tokens\n"
    "(-1: all). logit_bias: {token_id: bias}. seed: this request's generator (-1 or None: random). stop: a string or\n"
    "list of strings that end the output (left out of it). stop_token_ids, ignore_eos,\n"
    "max_tokens (default 16), min_tokens. logprobs / prompt_logprobs: the chosen token's\n"
    "log-probability and this many alternatives (0..20). skip_special_tokens: control tokens'\n"
    "text left out of the output. structured_outputs: a StructuredOutputsParams constraint.\n"
    "use_beam_search, length_penalty, early_stopping: beam search of width best_of (or n).";

}  // namespace

void bind_sampling_params(nb::module_& m) {
  const SamplingParams kDefaults{};
  nb::class_<StructuredOutputs>(
      m, "StructuredOutputsParams",
      "A constraint on the output (vLLM's StructuredOutputsParams): exactly one of json (a JSON\n"
      "Schema, dict or string), json_object, regex, choice (a list of strings) or grammar\n"
      "(GBNF). disable_any_whitespace (default True): JSON without whitespace between tokens;\n"
      "False allows a bounded amount. Either way the output ends where the root value closes.")
      .def(
          "__init__",
          [](StructuredOutputs* self, nb::handle json, bool json_object, std::optional<std::string> regex,
             std::optional<std::vector<std::string>> choice, std::optional<std::string> grammar,
             bool disable_any_whitespace) {
            new (self) StructuredOutputs{};
            self->json = schema_text(json);
            self->json_object = json_object;
            self->regex = std::move(regex);
            self->choice = std::move(choice);
            self->grammar = std::move(grammar);
            self->compact_whitespace = disable_any_whitespace;
          },
          nb::kw_only(), "json"_a = nb::none(), "json_object"_a = false, "regex"_a = nb::none(),
          "choice"_a = nb::none(), "grammar"_a = nb::none(), "disable_any_whitespace"_a = true)
      .def_rw("json", &StructuredOutputs::json, "The JSON Schema's text, or None.")
      .def_rw("json_object", &StructuredOutputs::json_object, "Any JSON object.")
      .def_rw("regex", &StructuredOutputs::regex, "The whole output matches this regular expression.")
      .def_rw("choice", &StructuredOutputs::choice, "The output is exactly one of these strings.")
      .def_rw("grammar", &StructuredOutputs::grammar, "A GBNF grammar (llama.cpp's notation).")
      .def_rw("disable_any_whitespace", &StructuredOutputs::compact_whitespace, "JSON without whitespace.");

  nb::class_<SamplingParams>(m, "SamplingParams", kSamplingDoc)
      .def(
          "__init__",
          [](SamplingParams* self, int32_t n, std::optional<int32_t> best_of, float presence_penalty,
             float frequency_penalty, float repetition_penalty, float temperature, float top_p, int32_t top_k,
             float min_p, float typical_p, int32_t penalty_last_n, nb::handle seed, nb::handle stop,
             std::optional<std::vector<int32_t>> stop_token_ids, bool ignore_eos, int64_t max_tokens,
             int64_t min_tokens, std::optional<int32_t> logprobs, std::optional<int32_t> prompt_logprobs,
             bool skip_special_tokens, std::optional<std::map<int32_t, float>> logit_bias,
             std::optional<StructuredOutputs> structured_outputs, bool use_beam_search, float length_penalty,
             bool early_stopping) {
            SamplingParams p;
            p.n = n;
            p.best_of = best_of;
            p.presence_penalty = presence_penalty;
            p.frequency_penalty = frequency_penalty;
            p.repetition_penalty = repetition_penalty;
            p.temperature = temperature;
            p.top_p = top_p;
            p.top_k = top_k;
            p.min_p = min_p;
            p.typical_p = typical_p;
            p.penalty_last_n = penalty_last_n;
            p.seed = seed_value("seed", seed);
            p.stop = stop_strings(stop);
            p.stop_token_ids = stop_token_ids.value_or(std::vector<int32_t>{});
            p.ignore_eos = ignore_eos;
            p.max_tokens = max_tokens;
            p.min_tokens = min_tokens;
            p.logprobs = logprobs;
            p.prompt_logprobs = prompt_logprobs;
            p.skip_special_tokens = skip_special_tokens;
            p.logit_bias = logit_bias.value_or(std::map<int32_t, float>{});
            p.structured_outputs = std::move(structured_outputs);
            p.use_beam_search = use_beam_search;
            p.length_penalty = length_penalty;
            p.early_stopping = early_stopping;
            p.validate();
            new (self) SamplingParams(std::move(p));
          },
          // The defaults are SamplingParams' own, the engine's one set (docs/sampling-defaults.md).
          nb::kw_only(), "n"_a = kDefaults.n, "best_of"_a = nb::none(),
          "presence_penalty"_a = kDefaults.presence_penalty, "frequency_penalty"_a = kDefaults.frequency_penalty,
          "repetition_penalty"_a = kDefaults.repetition_penalty, "temperature"_a = kDefaults.temperature,
          "top_p"_a = kDefaults.top_p, "top_k"_a = kDefaults.top_k, "min_p"_a = kDefaults.min_p,
          "typical_p"_a = kDefaults.typical_p, "penalty_last_n"_a = kDefaults.penalty_last_n, "seed"_a = nb::none(),
          "stop"_a = nb::none(), "stop_token_ids"_a = nb::none(), "ignore_eos"_a = kDefaults.ignore_eos,
          "max_tokens"_a = kDefaults.max_tokens, "min_tokens"_a = kDefaults.min_tokens, "logprobs"_a = nb::none(),
          "prompt_logprobs"_a = nb::none(), "skip_special_tokens"_a = kDefaults.skip_special_tokens,
          "logit_bias"_a = nb::none(), "structured_outputs"_a = nb::none(),
          "use_beam_search"_a = kDefaults.use_beam_search, "length_penalty"_a = kDefaults.length_penalty,
          "early_stopping"_a = kDefaults.early_stopping)
      .def_rw("n", &SamplingParams::n, "Completions per prompt.")
      .def_rw("best_of", &SamplingParams::best_of, "Sequences sampled per prompt (>= n), or None for n.")
      .def_rw("presence_penalty", &SamplingParams::presence_penalty, "Subtracted once from every output token's logit.")
      .def_rw("frequency_penalty", &SamplingParams::frequency_penalty, "Subtracted per occurrence in the output.")
      .def_rw("repetition_penalty", &SamplingParams::repetition_penalty, "CTRL's penalty over prompt and output.")
      .def_rw("temperature", &SamplingParams::temperature, "0 is greedy.")
      .def_rw("top_p", &SamplingParams::top_p, "Nucleus filter (1: off).")
      .def_rw("top_k", &SamplingParams::top_k, "Keep the k most likely tokens (0 or -1: off).")
      .def_rw("min_p", &SamplingParams::min_p, "Drop tokens below min_p times the most likely's probability.")
      .def_rw("typical_p", &SamplingParams::typical_p, "Locally typical sampling (1: off).")
      .def_rw("penalty_last_n", &SamplingParams::penalty_last_n, "The penalties' window in tokens (-1: all).")
      .def_prop_rw(
          "seed", [](const SamplingParams& p) { return p.seed; },
          [](SamplingParams& p, nb::handle seed) { p.seed = seed_value("seed", seed); },
          "The request's random seed, or None (random; -1 sets None).")
      .def_prop_rw(
          "stop", [](const SamplingParams& p) { return p.stop; },
          [](SamplingParams& p, nb::handle stop) { p.stop = stop_strings(stop); }, "Strings that end the output.")
      .def_rw("stop_token_ids", &SamplingParams::stop_token_ids, "Token ids that end the output.")
      .def_rw("ignore_eos", &SamplingParams::ignore_eos, "Go on past end-of-generation tokens.")
      .def_rw("max_tokens", &SamplingParams::max_tokens, "The most tokens generated per completion.")
      .def_rw("min_tokens", &SamplingParams::min_tokens, "Tokens generated before anything may end the output.")
      .def_rw("logprobs", &SamplingParams::logprobs, "Alternatives reported per output token, or None.")
      .def_rw("prompt_logprobs", &SamplingParams::prompt_logprobs, "Alternatives reported per prompt token, or None.")
      .def_rw("skip_special_tokens", &SamplingParams::skip_special_tokens, "Leave control tokens' text out.")
      .def_rw("logit_bias", &SamplingParams::logit_bias, "{token_id: bias} added to the logits.")
      .def_rw("structured_outputs", &SamplingParams::structured_outputs, "A constraint on the output, or None.")
      .def_rw("use_beam_search", &SamplingParams::use_beam_search, "Beam search instead of sampling.")
      .def_rw("length_penalty", &SamplingParams::length_penalty, "Beam search's length penalty.")
      .def_rw("early_stopping", &SamplingParams::early_stopping, "Beam search stops at the first n finished.")
      .def("__repr__", [](const SamplingParams& p) {
        return fmt::format(
            "SamplingParams(n={}, best_of={}, presence_penalty={}, frequency_penalty={}, repetition_penalty={}, "
            "temperature={}, top_p={}, top_k={}, min_p={}, seed={}, stop={}, stop_token_ids={}, ignore_eos={}, "
            "max_tokens={}, min_tokens={}, logprobs={}, prompt_logprobs={}, skip_special_tokens={})",
            p.n, optional_text(p.best_of), p.presence_penalty, p.frequency_penalty, p.repetition_penalty, p.temperature,
            p.top_p, p.top_k, p.min_p, optional_text(p.seed), quoted_list(p.stop),
            fmt::format("[{}]", fmt::join(p.stop_token_ids, ", ")), p.ignore_eos ? "True" : "False", p.max_tokens,
            p.min_tokens, optional_text(p.logprobs), optional_text(p.prompt_logprobs),
            p.skip_special_tokens ? "True" : "False");
      });
}

}  // namespace lumen::python
