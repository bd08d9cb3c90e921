#pragma once
// A prompt `lumen bench serve` sends, and the JSON body it goes in. Prompts are text or token
// ids (an OpenAI completions prompt may be a list of token ids; llama-server and vLLM accept
// it too). Bodies always stream with usage in the last chunk, because TTFT and ITL need the
// stream and the usage gives the exact number of generated tokens.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace lumen::benchmark {

struct BenchPrompt {
  std::variant<std::string, std::vector<int32_t>> prompt;
  int64_t max_tokens = 0;
  // The prompt's length in tokens when known here (token prompts); -1 for text, whose
  // count comes from the server's usage.
  int64_t prompt_tokens() const;
};

struct BodyOptions {
  std::string model;  // empty: no "model" field (servers with one model accept that)
  bool chat = false;  // /v1/chat/completions: the prompt is one user message
  bool ignore_eos = true;
  double temperature = 0.0;
  nlohmann::json extra = nlohmann::json::object();  // merged last: any other field
};

// Throws lumen::Error for a token prompt sent to a chat endpoint.
std::string request_body(const BenchPrompt& prompt, const BodyOptions& options);

// Prompts from a JSON Lines file: each line a string, a list of token ids, or an object
// {"prompt": string or token ids, "max_tokens": N}. max_tokens is 0 where a line gives none
// (the caller chooses). Blank lines are skipped; throws lumen::Error naming a bad line.
std::vector<BenchPrompt> load_prompt_file(const std::string& path);

}  // namespace lumen::benchmark
