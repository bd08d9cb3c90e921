#include "benchmark/bench_prompt.h"

#include <fstream>
#include <optional>

#include "util/error.h"

namespace lumen::benchmark {

namespace {

// A JSON array of token ids, as int32; nullopt when it is anything else.
std::optional<std::vector<int32_t>> token_ids(const nlohmann::json& value) {
  if (!value.is_array() || value.empty()) return std::nullopt;
  std::vector<int32_t> ids;
  for (const auto& v : value) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) return std::nullopt;
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

std::optional<std::variant<std::string, std::vector<int32_t>>> prompt_value(const nlohmann::json& value) {
  if (value.is_string() && !value.get_ref<const std::string&>().empty()) return value.get<std::string>();
  if (auto ids = token_ids(value)) return *ids;
  return std::nullopt;
}

}  // namespace

int64_t BenchPrompt::prompt_tokens() const {
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&prompt)) return static_cast<int64_t>(ids->size());
  return -1;
}

std::string request_body(const BenchPrompt& prompt, const BodyOptions& options) {
  nlohmann::json body = nlohmann::json::object();
  if (!options.model.empty()) body["model"] = options.model;
  if (options.chat) {
    const auto* text = std::get_if<std::string>(&prompt.prompt);
    if (text == nullptr) fail("a chat endpoint takes text prompts, not token ids: give --prompts-file with text prompts (one JSON string a line)");
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", *text}}});
  } else {
    std::visit([&](const auto& p) { body["prompt"] = p; }, prompt.prompt);
  }
  body["max_tokens"] = prompt.max_tokens;
  body["temperature"] = options.temperature;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (options.ignore_eos) body["ignore_eos"] = true;
  body.update(options.extra);
  return body.dump();
}

std::vector<BenchPrompt> load_prompt_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open the prompt file {}", path);
  std::vector<BenchPrompt> prompts;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json value = nlohmann::json::parse(line, nullptr, false);
    if (value.is_discarded()) fail("{}:{}: not JSON", path, line_no);
    BenchPrompt p;
    const nlohmann::json& prompt = value.is_object() && value.contains("prompt") ? value["prompt"] : value;
    auto parsed = prompt_value(prompt);
    if (!parsed) fail("{}:{}: the prompt must be a non-empty string or list of token ids", path, line_no);
    p.prompt = std::move(*parsed);
    if (value.is_object() && value.contains("max_tokens")) {
      const nlohmann::json& m = value["max_tokens"];
      if (!m.is_number_integer() || m.get<int64_t>() < 1)
        fail("{}:{}: max_tokens must be a positive integer", path, line_no);
      p.max_tokens = m.get<int64_t>();
    }
    prompts.push_back(std::move(p));
  }
  if (prompts.empty()) fail("the prompt file {} holds no prompts", path);
  return prompts;
}

}  // namespace lumen::benchmark
