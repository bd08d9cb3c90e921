#pragma once
// OpenAI's response bodies: whole completions and chat completions, their streamed chunks, usage
// and both log-probability shapes (completions: parallel lists; chat: one object per token).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "lumen/outputs.h"
#include "server/sampling_request.h"
#include "server/tool_call_format.h"
#include "lumen/model.h"

namespace lumen::server {

// What every body of one response shares.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;        // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;   // Unix seconds
  std::string model;
};

// A fresh id with the endpoint's prefix and the current time.
ResponseHeader make_response_header(Endpoint endpoint, std::string model);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  nlohmann::json to_json() const;
};

// Log-probabilities of generated tokens in the endpoint's shape. Token strings are the tokens'
// bytes (a piece of a character becomes U+FFFD on the wire).
class LogprobWriter {
 public:
  LogprobWriter(const Model& model, Endpoint endpoint) : model_(&model), endpoint_(endpoint) {}
  // `tokens` continue those already written for this choice (text_offset runs on).
  nlohmann::json write(std::span<const GeneratedToken> tokens);
  // Completions with echo: the prompt's tokens in the same lists, before the generated ones
  // (the first has null log-probabilities, as OpenAI's).
  nlohmann::json write_prompt(std::span<const PromptLogprob> prompt);

 private:
  static nlohmann::json empty_completion_lists();
  void append_completion_entry(nlohmann::json& out, int32_t token, float logprob,
                               std::span<const TokenAlternative> top);

  const Model* model_;
  Endpoint endpoint_;
  int64_t text_offset_ = 0;
};

// vLLM's prompt_logprobs: per prompt token null (the first) or {"<token id>": {"logprob",
// "decoded_token"}} for the prompt token and each alternative.
nlohmann::json prompt_logprobs_json(const Model& model, std::span<const PromptLogprob> prompt);

// Completions' parallel lists of `a` followed by those of `b`.
nlohmann::json concat_logprob_lists(nlohmann::json a, const nlohmann::json& b);

// One choice of a whole (non-streamed) response.
struct ChoiceOutput {
  int64_t index = 0;
  std::string text;
  nlohmann::json logprobs;  // null when not asked for
  nlohmann::json prompt_logprobs;  // omitted when null
  FinishReason finish = FinishReason::Abort;
  // Chat with tools: the calls the reply makes (its message's tool_calls; content is null when
  // `text` is empty, and a reply that ended normally has finish_reason "tool_calls").
  std::vector<ParsedToolCall> tool_calls;
  // A reasoning model's reasoning (server/reasoning_split.h): message.reasoning_content, left
  // out when empty.
  std::string reasoning;
};

nlohmann::json whole_response(const ResponseHeader& header, std::span<const ChoiceOutput> choices,
                              const Usage& usage);

// A streamed chunk for one choice: new text (chat: delta.content; `first` adds the assistant
// role), its log-probabilities or null, and the finish reason on the last one. `with_usage`
// adds "usage": null as OpenAI does when stream_options.include_usage is set.
nlohmann::json stream_chunk(const ResponseHeader& header, int64_t index, const std::string& text, bool first,
                            nlohmann::json logprobs, const FinishReason* finish, bool with_usage);

// A reasoning model's streamed reasoning: a chunk whose delta holds reasoning_content only.
nlohmann::json reasoning_chunk(const ResponseHeader& header, int64_t index, const std::string& reasoning,
                               bool with_usage);

// Chat with tools: a chunk whose delta holds the reply's calls (OpenAI's streamed shape: each
// with its index, id, type and function name and arguments; arguments whole, not in pieces).
nlohmann::json tool_calls_chunk(const ResponseHeader& header, int64_t index, std::span<const ParsedToolCall> calls,
                                bool with_usage);
// The finish reason a choice reports: "tool_calls" for a reply with calls that ended normally.
std::string finish_reason_for(FinishReason finish, bool has_tool_calls);

// The last chunk when usage was asked for: no choices, the totals.
nlohmann::json usage_chunk(const ResponseHeader& header, const Usage& usage);

}  // namespace lumen::server
