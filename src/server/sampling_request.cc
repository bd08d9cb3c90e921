#include "server/sampling_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "lumen/cache_salt.h"
#include "lumen/error.h"
#include "lumen/kv_eviction.h"
#include "server/api_error.h"
#include "server/request_fields.h"
#include "server/structured_request.h"

namespace lumen::server {

namespace {

constexpr size_t kMaxStopTokenIds = 256;
constexpr size_t kMaxLogitBias = 4096;

void read_logit_bias(const RequestFields& fields, const ServingLimits& limits,
                     SamplingParams& params) {
  const nlohmann::json* bias = fields.find("logit_bias");
  if (bias == nullptr) return;
  if (!bias->is_object()) invalid("logit_bias", "'logit_bias' must be an object of token id -> bias");
  if (bias->size() > kMaxLogitBias) invalid("logit_bias", "'logit_bias' holds more than {} entries", kMaxLogitBias);
  for (const auto& [key, value] : bias->items()) {
    // OpenAI's keys are token ids written as strings.
    int64_t id = -1;
    size_t used = 0;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != key.size() || id < 0 || id >= limits.vocab_size) {
      invalid("logit_bias", "'logit_bias' key '{}' is not a token id in [0, {})", key, limits.vocab_size);
    }
    if (!value.is_number() || !(value.get<double>() >= -100.0 && value.get<double>() <= 100.0)) {
      invalid("logit_bias", "'logit_bias' values must be numbers in [-100, 100]");
    }
    params.logit_bias[static_cast<int32_t>(id)] = value.get<float>();
  }
}

void read_logprobs(const RequestFields& fields, Endpoint endpoint, SamplingParams& params) {
  const auto max = kMaxLogprobs;
  if (endpoint == Endpoint::Completions) {
    // Completions: logprobs is the number of alternatives (0..20).
    if (auto k = fields.integer("logprobs", 0, max)) params.logprobs = static_cast<int32_t>(*k);
    return;
  }
  // Chat: logprobs is a boolean, top_logprobs the number of alternatives and only with it.
  const bool wanted = fields.boolean("logprobs").value_or(false);
  const auto top = fields.integer("top_logprobs", 0, max);
  if (top && !wanted) invalid("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  if (wanted) params.logprobs = static_cast<int32_t>(top.value_or(0));
}

}  // namespace

GenerationOptions parse_generation_options(const nlohmann::json& body, Endpoint endpoint,
                                           const ServingLimits& limits) {
  const RequestFields fields(body);
  GenerationOptions out;
  SamplingParams& p = out.params;

  if (auto v = fields.number("temperature", 0.0, 2.0)) p.temperature = static_cast<float>(*v);
  if (auto v = fields.number("top_p", 0.0, 1.0)) {
    if (*v <= 0.0) invalid("top_p", "'top_p' must be in (0, 1]");
    p.top_p = static_cast<float>(*v);
  }
  if (auto v = fields.integer("top_k", -1, limits.vocab_size)) p.top_k = static_cast<int32_t>(*v);
  if (auto v = fields.number("min_p", 0.0, 1.0)) p.min_p = static_cast<float>(*v);
  if (auto v = fields.number("typical_p", 0.0, 1.0)) {
    if (*v <= 0.0) invalid("typical_p", "'typical_p' must be in (0, 1]");
    p.typical_p = static_cast<float>(*v);
  }
  if (auto v = fields.number("frequency_penalty", -2.0, 2.0)) p.frequency_penalty = static_cast<float>(*v);
  if (auto v = fields.number("presence_penalty", -2.0, 2.0)) p.presence_penalty = static_cast<float>(*v);
  if (auto v = fields.number("repetition_penalty", 0.0, 100.0)) {
    if (*v <= 0.0) invalid("repetition_penalty", "'repetition_penalty' must be in (0, 100]");
    p.repetition_penalty = static_cast<float>(*v);
  }
  read_logit_bias(fields, limits, p);

  // An integer from 0 to 2^64-1 seeds the generator (2.0 is an integer, as for the other
  // fields); -1 (llama-server's and vLLM's "random") or null draws a random one. Anything else
  // is a 400, not a silently wrapped or saturated seed.
  if (const nlohmann::json* seed = fields.find("seed")) {
    const double as_double = seed->is_number() ? seed->get<double>() : std::nan("");
    if (seed->is_number_unsigned()) {
      p.seed = seed->get<uint64_t>();
    } else if (seed->is_number_float() && std::floor(as_double) == as_double && as_double >= 0.0 &&
               as_double < 0x1p64) {
      p.seed = static_cast<uint64_t>(as_double);
    } else if (!seed->is_number() || seed->is_boolean() || as_double != -1.0) {
      invalid("seed", "'seed' must be -1 (a random seed) or an integer in [0, 18446744073709551615]");
    }
  }

  // The token limit: chat's max_completion_tokens wins over its deprecated max_tokens.
  const char* limit_field = "max_tokens";
  if (endpoint == Endpoint::ChatCompletions && fields.has("max_completion_tokens")) {
    limit_field = "max_completion_tokens";
  }
  // Past the context only when the engine shifts it; the output budget bounds it then.
  const int64_t most_tokens = limits.context_shift ? std::max(limits.max_model_len, limits.max_output_records)
                                                   : limits.max_model_len;
  if (auto v = fields.integer(limit_field, 1, most_tokens)) {
    p.max_tokens = *v;
    out.max_tokens_given = true;
  }
  if (auto v = fields.integer("min_tokens", 0, limits.max_model_len)) p.min_tokens = *v;
  if (auto v = fields.strings("stop", kMaxStopStrings)) {
    for (const std::string& s : *v) {
      if (s.size() > kMaxStopStringBytes) {
        invalid("stop", "a stop string may be at most {} bytes (got {})", kMaxStopStringBytes, s.size());
      }
    }
    p.stop = std::move(*v);
  }
  if (auto v = fields.integers("stop_token_ids", 0, limits.vocab_size - 1, kMaxStopTokenIds)) {
    for (int64_t id : *v) p.stop_token_ids.push_back(static_cast<int32_t>(id));
  }
  if (auto v = fields.boolean("ignore_eos")) p.ignore_eos = *v;
  if (auto v = fields.boolean("skip_special_tokens")) p.skip_special_tokens = *v;
  read_logprobs(fields, endpoint, p);
  if (const nlohmann::json* salt = fields.find("cache_salt")) {
    if (!salt->is_string() || salt->get<std::string>().empty() || salt->get<std::string>().size() > 256) {
      invalid("cache_salt", "'cache_salt' must be a non-empty string of at most 256 bytes");
    }
    out.cache_salt = cache_salt_of(salt->get<std::string>());
  }

  // Importance-based KV eviction for this request (lumen/kv_eviction.h): the spec --kv-eviction
  // takes for snapkv and h2o, or "none"; the engine checks that it can run it.
  if (const nlohmann::json* spec = fields.find("kv_eviction")) {
    if (!spec->is_string() || spec->get<std::string>().size() > 128) {
      invalid("kv_eviction", "'kv_eviction' must be a string such as \"snapkv:budget=512\" or \"h2o:budget=512\"");
    }
    try {
      p.kv_eviction = parse_kv_importance(spec->get<std::string>());
    } catch (const Error& e) {
      invalid("kv_eviction", "'kv_eviction': {}", e.what());
    }
    if (p.kv_eviction->budget > limits.max_model_len) {
      invalid("kv_eviction", "'kv_eviction': the budget ({}) is larger than the context ({})", p.kv_eviction->budget,
              limits.max_model_len);
    }
  }
  if (auto v = fields.integer("n", 1, limits.max_n)) out.n = static_cast<int32_t>(*v);
  p.n = out.n;
  if (auto v = fields.integer("best_of", 1, limits.max_n)) {
    if (*v < out.n) invalid("best_of", "'best_of' ({}) must be at least n ({})", *v, out.n);
    p.best_of = static_cast<int32_t>(*v);
  }
  // vLLM's extensions for beam search (width: best_of, or n).
  p.use_beam_search = fields.boolean("use_beam_search").value_or(false);
  if (auto v = fields.number("length_penalty", -10.0, 10.0)) p.length_penalty = static_cast<float>(*v);
  if (auto v = fields.boolean("early_stopping")) p.early_stopping = *v;
  if (p.use_beam_search && !p.stop.empty()) {
    invalid("stop", "'stop' strings are not supported with beam search ('stop_token_ids' are)");
  }
  if (auto v = fields.integer("prompt_logprobs", 0, kMaxLogprobs)) {
    p.prompt_logprobs = static_cast<int32_t>(*v);
    out.prompt_logprobs_field = true;
  }

  if (auto structured = parse_structured_request(fields)) {
    if (p.use_beam_search) invalid(structured->field, "structured outputs are not supported with beam search");
    p.structured_outputs = std::move(structured->constraint);
    out.structured_field = std::move(structured->field);
  }

  out.stream = fields.boolean("stream").value_or(false);
  if (out.stream && p.best_of.value_or(p.n) > p.n && !p.use_beam_search) {
    invalid("best_of", "'best_of' greater than n cannot be streamed (the best are known only at the end)");
  }
  if (out.stream && p.prompt_logprobs) invalid("prompt_logprobs", "'prompt_logprobs' cannot be streamed");
  if (const nlohmann::json* options = fields.find("stream_options")) {
    if (!out.stream) invalid("stream_options", "'stream_options' is only allowed with 'stream': true");
    if (!options->is_object()) invalid("stream_options", "'stream_options' must be an object");
    out.include_usage = RequestFields(*options).boolean("include_usage").value_or(false);
  }
  return out;
}

int64_t max_new_tokens(const GenerationOptions& options, Endpoint endpoint, int64_t room) {
  if (options.max_tokens_given) return options.params.max_tokens;
  return endpoint == Endpoint::Completions ? std::min<int64_t>(16, room) : room;
}

}  // namespace lumen::server
