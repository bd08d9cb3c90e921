#include "server/completion_request.h"

#include "server/api_error.h"
#include "server/request_fields.h"

namespace lumen::server {

namespace {

std::vector<int32_t> text_prompt(const std::string& text, const Model& model) {
  if (text.empty()) invalid("prompt", "the prompt is empty");
  std::vector<int32_t> tokens = model.tokenize(text, {.add_special = true, .parse_special = true});
  if (tokens.empty()) invalid("prompt", "the prompt is empty");
  return tokens;
}

std::vector<int32_t> token_prompt(const nlohmann::json& ids, const ServingLimits& limits) {
  if (ids.empty()) invalid("prompt", "the prompt is empty");
  std::vector<int32_t> tokens;
  tokens.reserve(ids.size());
  for (const auto& id : ids) {
    auto value = as_integer(id, 0, limits.vocab_size - 1);
    if (!value) invalid("prompt", "the prompt holds a token id outside [0, {})", limits.vocab_size);
    tokens.push_back(static_cast<int32_t>(*value));
  }
  return tokens;
}

}  // namespace

CompletionRequest parse_completion_request(const nlohmann::json& body, const Model& model,
                                           const ServingLimits& limits) {
  const RequestFields fields(body);
  CompletionRequest out;
  const nlohmann::json* prompt = fields.find("prompt");
  if (prompt == nullptr) invalid("prompt", "'prompt' is required");
  const char* shape = "'prompt' must be a string, a list of strings, a list of token ids or a list of lists of token ids";
  auto add_text = [&](const std::string& text) {
    out.prompts.push_back(text_prompt(text, model));
    out.prompt_texts.push_back(text);
  };
  auto add_ids = [&](const nlohmann::json& ids) {
    out.prompts.push_back(token_prompt(ids, limits));
    // Echoed as vLLM does: control tokens (BOS, <|im_start|>...) leave no text.
    out.prompt_texts.push_back(model.detokenize(out.prompts.back(), /*skip_special=*/true));
  };
  if (prompt->is_string()) {
    add_text(prompt->get<std::string>());
  } else if (prompt->is_array()) {
    if (prompt->empty()) invalid("prompt", "the prompt is empty");
    const nlohmann::json& first = prompt->front();
    if (first.is_number()) {
      add_ids(*prompt);
    } else {
      if (prompt->size() > static_cast<size_t>(limits.max_prompts)) {
        invalid("prompt", "at most {} prompts per request", limits.max_prompts);
      }
      for (const auto& item : *prompt) {
        if (item.is_string()) add_text(item.get<std::string>());
        else if (item.is_array()) add_ids(item);
        else invalid("prompt", "{}", shape);
      }
    }
  } else {
    invalid("prompt", "{}", shape);
  }
  if (fields.has("suffix")) invalid("suffix", "'suffix' is not supported");
  out.echo = fields.boolean("echo").value_or(false);
  out.options = parse_generation_options(body, Endpoint::Completions, limits);
  if (out.echo && out.options.params.logprobs) {
    // OpenAI's legacy shape: the logprobs lists start with the prompt's tokens.
    if (out.options.stream) invalid("echo", "'echo' with 'logprobs' cannot be streamed");
    SamplingParams& p = out.options.params;
    p.prompt_logprobs = std::max(p.prompt_logprobs.value_or(0), *p.logprobs);
  }
  return out;
}

}  // namespace lumen::server
