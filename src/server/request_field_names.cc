#include "server/request_field_names.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>

#include "cli/closest_name.h"
#include "server/api_error.h"

namespace lumen::server {

namespace {

using Names = std::span<const std::string_view>;

// Tables of names, kept packed.
// clang-format off

// ---- Fields Lumen reads (a new one read anywhere in src/server must be added here) ----

// parse_generation_options and parse_structured_request: both generation endpoints.
constexpr std::string_view kGenerationFields[] = {
    "model", "temperature", "top_p", "top_k", "min_p", "typical_p", "frequency_penalty", "presence_penalty",
    "repetition_penalty", "logit_bias", "seed", "max_tokens", "min_tokens", "stop", "stop_token_ids",
    "ignore_eos", "skip_special_tokens", "logprobs", "cache_salt", "n", "best_of", "use_beam_search",
    "length_penalty", "early_stopping", "prompt_logprobs", "stream", "stream_options", "response_format",
    "structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "grammar", "json_schema",
    "kv_eviction"};
// suffix is read to be refused with its own message.
constexpr std::string_view kCompletionFields[] = {"prompt", "echo", "suffix"};
// The conversation, its template and tools (chat_request.cc, tool_request.cc); /tokenize reads
// them too, to render the same prompt. OpenAI's legacy functions / function_call are read to be
// refused with a pointer to tools.
constexpr std::string_view kChatTemplateFields[] = {
    "messages", "tools", "tool_choice", "parallel_tool_calls", "functions", "function_call",
    "chat_template_kwargs", "add_generation_prompt", "continue_final_message"};
// reasoning_format is llama-server's, include_reasoning vLLM's (server/reasoning_split.h).
constexpr std::string_view kChatFields[] = {"max_completion_tokens", "top_logprobs", "reasoning_format",
                                            "include_reasoning"};
constexpr std::string_view kTokenizeFields[] = {"model", "prompt", "add_special_tokens"};
constexpr std::string_view kDetokenizeFields[] = {"model", "tokens"};
constexpr std::string_view kEmbeddingsFields[] = {"model", "input", "encoding_format", "dimensions"};

// ---- OpenAI's fields Lumen accepts and does not act on ----

constexpr std::string_view kOpenAiCompletionExtras[] = {"user"};
constexpr std::string_view kOpenAiChatExtras[] = {"user", "metadata", "store", "service_tier", "modalities", "audio",
                                     "prediction", "reasoning_effort", "verbosity", "web_search_options",
                                     "prompt_cache_key", "safety_identifier"};

// ---- vLLM's and llama-server's extras Lumen does not support ----

// vLLM's, on both generation endpoints (vllm/entrypoints/openai/protocol.py).
constexpr std::string_view kVllmExtras[] = {"include_stop_str_in_output", "spaces_between_special_tokens",
                               "truncate_prompt_tokens", "allowed_token_ids", "bad_words", "priority", "request_id",
                               "logits_processors", "return_tokens_as_token_ids", "return_token_ids",
                               "guided_decoding_backend", "guided_whitespace_pattern", "structural_tag",
                               "kv_transfer_params", "vllm_xargs", "add_special_tokens", "mm_processor_kwargs"};
constexpr std::string_view kVllmChatExtras[] = {"echo", "documents", "chat_template"};
constexpr std::string_view kVllmCompletionExtras[] = {"prompt_embeds"};
// llama-server's sampling and slot fields (tools/server/README.md), on both endpoints.
constexpr std::string_view kLlamaServerExtras[] = {
    "n_predict", "n_indent", "n_keep", "n_probs", "min_keep", "dynatemp_range", "dynatemp_exponent",
    "repeat_penalty", "repeat_last_n", "penalize_nl", "tfs_z", "top_n_sigma", "mirostat", "mirostat_tau",
    "mirostat_eta", "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers",
    "xtc_probability", "xtc_threshold", "samplers", "t_max_predict_ms", "id_slot", "cache_prompt", "return_tokens",
    "return_progress", "timings_per_token", "post_sampling_probs", "response_fields", "lora", "image_data",
    "reasoning_format", "parse_tool_calls"};
// vLLM's (EmbeddingCompletionRequest) and llama-server's embedding extras.
constexpr std::string_view kEmbeddingsExtras[] = {"truncate_prompt_tokens", "add_special_tokens", "priority",
                                                  "request_id", "normalize", "content", "embd_normalize"};
constexpr std::string_view kTokenizeExtras[] = {"return_token_strs", "chat_template", "mm_processor_kwargs",  // vLLM
                                   "content", "add_special", "parse_special", "with_pieces"};    // llama-server

// clang-format on

bool in_any(std::string_view name, const std::vector<Names>& lists) {
  return std::any_of(lists.begin(), lists.end(),
                     [&](Names list) { return std::find(list.begin(), list.end(), name) != list.end(); });
}

struct EndpointFields {
  std::vector<Names> read;
  std::vector<Names> ignored;
};

EndpointFields fields_of(JsonEndpoint endpoint) {
  switch (endpoint) {
    case JsonEndpoint::Completions:
      return {{kGenerationFields, kCompletionFields},
              {kOpenAiCompletionExtras, kVllmExtras, kVllmCompletionExtras, kLlamaServerExtras}};
    case JsonEndpoint::ChatCompletions:
      return {{kGenerationFields, kChatTemplateFields, kChatFields},
              {kOpenAiChatExtras, kVllmExtras, kVllmChatExtras, kLlamaServerExtras}};
    case JsonEndpoint::Tokenize: return {{kTokenizeFields, kChatTemplateFields}, {kTokenizeExtras}};
    case JsonEndpoint::Detokenize: return {{kDetokenizeFields}, {}};
    case JsonEndpoint::Embeddings: return {{kEmbeddingsFields}, {kOpenAiCompletionExtras, kEmbeddingsExtras}};
  }
  return {};
}

}  // namespace

std::vector<std::string> check_field_names(const nlohmann::json& body, JsonEndpoint endpoint) {
  const EndpointFields fields = fields_of(endpoint);
  std::vector<std::string> ignored, unknown;
  for (const auto& [name, value] : body.items()) {
    if (in_any(name, fields.read)) continue;
    (in_any(name, fields.ignored) ? ignored : unknown).push_back(name);
  }
  if (!unknown.empty()) {
    // OpenAI's answer to a field it does not know ("Unrecognized request argument supplied").
    std::string names;
    for (const std::string& name : unknown) names += fmt::format("{}'{}'", names.empty() ? "" : ", ", name);
    // The CLI's did-you-mean, over this endpoint's fields: a typo is the likeliest unknown field.
    std::vector<std::string> known;
    for (const std::vector<Names>* lists : {&fields.read, &fields.ignored}) {
      for (Names list : *lists) known.insert(known.end(), list.begin(), list.end());
    }
    const std::optional<std::string> meant = cli::closest_name(unknown.front(), known);
    throw ApiError(400,
                   fmt::format("unrecognized request field{} {}{}", unknown.size() == 1 ? "" : "s", names,
                               meant ? fmt::format(" (did you mean '{}'?)", *meant) : ""),
                   unknown.front(), "unrecognized_field");
  }
  return ignored;
}

std::string ignored_fields_header(const std::vector<std::string>& ignored) {
  return fmt::format("{}", fmt::join(ignored, ", "));
}

}  // namespace lumen::server
