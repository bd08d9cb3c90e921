#include "server/openai_responses.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace lumen::server {

namespace {

// OpenAI's stand-in for a log-probability of zero probability: JSON has no -infinity.
double finite_logprob(float value) { return std::isfinite(value) ? static_cast<double>(value) : -9999.0; }

nlohmann::json byte_list(const std::string& bytes) {
  nlohmann::json out = nlohmann::json::array();
  for (unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

const char* object_name(Endpoint endpoint, bool chunk) {
  if (endpoint == Endpoint::Completions) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

}  // namespace

ResponseHeader make_response_header(Endpoint endpoint, std::string model) {
  // Unique enough across restarts: a random prefix drawn once, then a counter.
  static const uint64_t process_tag = std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  ResponseHeader h;
  h.endpoint = endpoint;
  h.id = fmt::format("{}-{:08x}{:08x}", endpoint == Endpoint::Completions ? "cmpl" : "chatcmpl",
                     process_tag & 0xffffffffu, counter.fetch_add(1));
  h.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
  h.model = std::move(model);
  return h;
}

nlohmann::json Usage::to_json() const {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

nlohmann::json LogprobWriter::write(std::span<const GeneratedToken> tokens) {
  if (endpoint_ == Endpoint::ChatCompletions) {
    nlohmann::json content = nlohmann::json::array();
    for (const GeneratedToken& t : tokens) {
      const std::string piece = model_->token_bytes(t.token);
      nlohmann::json top = nlohmann::json::array();
      for (const TokenAlternative& alt : t.top) {
        const std::string alt_piece = model_->token_bytes(alt.token);
        top.push_back({{"token", alt_piece}, {"logprob", finite_logprob(alt.logprob)}, {"bytes", byte_list(alt_piece)}});
      }
      content.push_back({{"token", piece},
                         {"logprob", finite_logprob(t.logprob)},
                         {"bytes", byte_list(piece)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}};
  }
  nlohmann::json out = empty_completion_lists();
  for (const GeneratedToken& t : tokens) append_completion_entry(out, t.token, t.logprob, t.top);
  return out;
}

nlohmann::json LogprobWriter::write_prompt(std::span<const PromptLogprob> prompt) {
  nlohmann::json out = empty_completion_lists();
  for (const PromptLogprob& p : prompt) append_completion_entry(out, p.token, p.logprob, p.top);
  return out;
}

nlohmann::json LogprobWriter::empty_completion_lists() {
  return {{"tokens", nlohmann::json::array()},
          {"token_logprobs", nlohmann::json::array()},
          {"top_logprobs", nlohmann::json::array()},
          {"text_offset", nlohmann::json::array()}};
}

void LogprobWriter::append_completion_entry(nlohmann::json& out, int32_t token, float logprob,
                                            std::span<const TokenAlternative> top) {
  const std::string piece = model_->token_bytes(token);
  out["tokens"].push_back(piece);
  // NaN: the first prompt token, which has no log-probability (null, as OpenAI's).
  const bool none = std::isnan(logprob);
  out["token_logprobs"].push_back(none ? nlohmann::json() : nlohmann::json(finite_logprob(logprob)));
  nlohmann::json alternatives = none ? nlohmann::json() : nlohmann::json::object();
  for (const TokenAlternative& alt : top) alternatives[model_->token_bytes(alt.token)] = finite_logprob(alt.logprob);
  // The token itself is among them, as OpenAI's and vLLM's legacy completions write it: up to
  // k + 1 entries when it is not one of the k likeliest (logprobs=0 gives just the token).
  if (!none) alternatives[piece] = finite_logprob(logprob);
  out["top_logprobs"].push_back(std::move(alternatives));
  out["text_offset"].push_back(text_offset_);
  text_offset_ += static_cast<int64_t>(piece.size());
}

nlohmann::json concat_logprob_lists(nlohmann::json a, const nlohmann::json& b) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const auto& item : b[key]) a[key].push_back(item);
  }
  return a;
}

nlohmann::json prompt_logprobs_json(const Model& model, std::span<const PromptLogprob> prompt) {
  nlohmann::json out = nlohmann::json::array();
  for (const PromptLogprob& p : prompt) {
    if (std::isnan(p.logprob)) {
      out.push_back(nullptr);
      continue;
    }
    nlohmann::json entry = nlohmann::json::object();
    auto add = [&](int32_t token, float logprob) {
      entry[std::to_string(token)] = {{"logprob", finite_logprob(logprob)},
                                      {"decoded_token", model.token_bytes(token)}};
    };
    add(p.token, p.logprob);
    for (const TokenAlternative& alt : p.top) add(alt.token, alt.logprob);
    out.push_back(std::move(entry));
  }
  return out;
}

namespace {

// One call as OpenAI writes it in a message's tool_calls (a streamed delta adds its index).
nlohmann::json tool_call_json(const ParsedToolCall& call) {
  return {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

// A streamed chunk around one choice.
nlohmann::json streamed_chunk(const ResponseHeader& header, nlohmann::json choice, bool with_usage) {
  nlohmann::json chunk = {{"id", header.id},
                          {"object", object_name(header.endpoint, true)},
                          {"created", header.created},
                          {"model", header.model},
                          {"choices", nlohmann::json::array({std::move(choice)})}};
  if (with_usage) chunk["usage"] = nullptr;
  return chunk;
}

}  // namespace

nlohmann::json whole_response(const ResponseHeader& header, std::span<const ChoiceOutput> choices,
                              const Usage& usage) {
  nlohmann::json list = nlohmann::json::array();
  for (const ChoiceOutput& c : choices) {
    nlohmann::json choice = {{"index", c.index}};
    if (header.endpoint == Endpoint::ChatCompletions) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        nlohmann::json calls = nlohmann::json::array();
        for (const ParsedToolCall& call : c.tool_calls) calls.push_back(tool_call_json(call));
        choice["message"]["tool_calls"] = std::move(calls);
      }
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = c.logprobs;
    if (!c.prompt_logprobs.is_null()) choice["prompt_logprobs"] = c.prompt_logprobs;
    choice["finish_reason"] = finish_reason_for(c.finish, !c.tool_calls.empty());
    list.push_back(std::move(choice));
  }
  return {{"id", header.id},
          {"object", object_name(header.endpoint, false)},
          {"created", header.created},
          {"model", header.model},
          {"choices", std::move(list)},
          {"usage", usage.to_json()}};
}

nlohmann::json stream_chunk(const ResponseHeader& header, int64_t index, const std::string& text, bool first,
                            nlohmann::json logprobs, const FinishReason* finish, bool with_usage) {
  nlohmann::json choice = {{"index", index}};
  if (header.endpoint == Endpoint::ChatCompletions) {
    nlohmann::json delta = nlohmann::json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish != nullptr ? nlohmann::json(finish_reason_name(*finish)) : nlohmann::json();
  return streamed_chunk(header, std::move(choice), with_usage);
}

nlohmann::json reasoning_chunk(const ResponseHeader& header, int64_t index, const std::string& reasoning,
                               bool with_usage) {
  nlohmann::json choice = {{"index", index},
                           {"delta", {{"reasoning_content", reasoning}}},
                           {"logprobs", nullptr},
                           {"finish_reason", nullptr}};
  return streamed_chunk(header, std::move(choice), with_usage);
}

nlohmann::json tool_calls_chunk(const ResponseHeader& header, int64_t index, std::span<const ParsedToolCall> calls,
                                bool with_usage) {
  nlohmann::json deltas = nlohmann::json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    nlohmann::json delta = {{"index", k}};
    delta.update(tool_call_json(calls[k]));
    deltas.push_back(std::move(delta));
  }
  nlohmann::json choice = {{"index", index},
                           {"delta", {{"tool_calls", std::move(deltas)}}},
                           {"logprobs", nullptr},
                           {"finish_reason", nullptr}};
  return streamed_chunk(header, std::move(choice), with_usage);
}

std::string finish_reason_for(FinishReason finish, bool has_tool_calls) {
  if (has_tool_calls && finish == FinishReason::Stop) return "tool_calls";
  return finish_reason_name(finish);
}

nlohmann::json usage_chunk(const ResponseHeader& header, const Usage& usage) {
  return {{"id", header.id},
          {"object", object_name(header.endpoint, true)},
          {"created", header.created},
          {"model", header.model},
          {"choices", nlohmann::json::array()},
          {"usage", usage.to_json()}};
}

}  // namespace lumen::server
