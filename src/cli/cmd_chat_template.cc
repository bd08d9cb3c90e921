// `lumen chat-template render`: renders a chat template for a conversation read as JSON on
// stdin, printing the prompt bytes exactly (no newline added). The template is a built-in
// (--chat-template NAME), a file (--template-file), or the model's tokenizer.chat_template;
// bos/eos default to the model's special tokens. `lumen chat-template list` names the built-ins.
//
// stdin: {"messages": [...], "tools": [...], "add_generation_prompt": true,
//         "bos_token": "...", "eos_token": "...", "context": {...}, "now": 1721988000}
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "chat/builtin_templates.h"
#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "gguf/file.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ChatTemplateCliOptions {
  std::string model;
  std::string template_file;
  std::string name;
};

std::string read_all(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The text of special token `id_key` (e.g. tokenizer.ggml.bos_token_id), or "" when absent.
std::string special_token_text(const gguf::Metadata& md, std::string_view id_key) {
  auto id = md.find_unsigned(id_key);
  const gguf::Array* tokens = md.find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING);
  if (!id || !tokens || *id >= tokens->strings.size()) return "";
  return tokens->strings[*id];
}

void render(const ChatTemplateCliOptions& o) {
  nlohmann::ordered_json request;
  try {
    request = nlohmann::ordered_json::parse(read_all(std::cin));
  } catch (const nlohmann::json::exception& e) {
    fail("stdin is not valid JSON: {}", e.what());
  }
  // A bare list of messages is the conversation itself, rendered for the assistant's reply.
  if (request.is_array()) request = nlohmann::ordered_json{{"messages", std::move(request)}};
  if (!request.is_object() || !request.contains("messages")) {
    fail("stdin must be a JSON list of messages, or an object with a \"messages\" list (see --help)");
  }
  chat::ChatTemplateOptions options;
  std::string text;
  if (!o.model.empty() || (o.name.empty() && o.template_file.empty())) {
    gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(o.model));
    const auto& md = file.metadata();
    options.bos_token = special_token_text(md, "tokenizer.ggml.bos_token_id");
    options.eos_token = special_token_text(md, "tokenizer.ggml.eos_token_id");
    if (o.name.empty() && o.template_file.empty()) {
      auto found = md.find_string("tokenizer.chat_template");
      const auto family =
          chat::builtin_chat_template_name_for_architecture(md.find_string("general.architecture").value_or(""));
      if (found) {
        text = *found;
      } else if (family) {
        text = std::string(*chat::builtin_chat_template(*family));  // as lumen chat and serve do
      } else {
        fail("the model has no tokenizer.chat_template; pass --chat-template NAME");
      }
    }
  }
  if (!o.name.empty()) {
    auto builtin = chat::builtin_chat_template(o.name);
    if (!builtin) fail("no built-in chat template named '{}' (see `lumen chat-template list`)", o.name);
    text = std::string(*builtin);
  } else if (!o.template_file.empty()) {
    std::ifstream in(o.template_file, std::ios::binary);
    if (!in) fail("cannot read {}", o.template_file);
    text = read_all(in);
  }
  try {
    options.add_generation_prompt = request.value("add_generation_prompt", true);
    if (request.contains("bos_token")) options.bos_token = request["bos_token"].get<std::string>();
    if (request.contains("eos_token")) options.eos_token = request["eos_token"].get<std::string>();
    if (request.contains("tools") && !request["tools"].is_null()) options.tools = request["tools"];
    if (request.contains("context")) options.extra_context = request["context"];
    if (request.contains("now")) options.now = request["now"].get<std::time_t>();
  } catch (const nlohmann::json::exception& e) {
    fail("bad request field: {}", e.what());
  }
  std::string prompt = chat::render_chat(text, request["messages"], options);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto options = std::make_shared<ChatTemplateCliOptions>();
  CLI::App* cmd = app.add_subcommand("chat-template", "Render or list chat templates");
  cmd->require_subcommand(1);
  CLI::App* render_cmd = cmd->add_subcommand(
      "render", "Render a conversation (JSON on stdin) with a chat template; prints the prompt");
  render_cmd->add_option("-m,--model", options->model, "GGUF model: its template and special tokens");
  render_cmd->add_option("--template-file", options->template_file, "Jinja template file");
  render_cmd->add_option("--chat-template", options->name, "Built-in template name");
  render_cmd->footer(
      "stdin: a list of messages, [{\"role\": \"user\", \"content\": \"Hi\"}], or an object\n"
      "  {\"messages\": [...], \"add_generation_prompt\": true, \"tools\": [...],\n"
      "   \"bos_token\": \"...\", \"eos_token\": \"...\", \"context\": {...}, \"now\": UNIX_TIME}\n"
      "add_generation_prompt defaults to true (the prompt ends where the assistant's reply begins).");
  render_cmd->callback([options] { render(*options); });
  CLI::App* list_cmd = cmd->add_subcommand("list", "Name the built-in chat templates");
  list_cmd->callback([] {
    for (auto name : chat::builtin_chat_template_names()) std::printf("%.*s\n", static_cast<int>(name.size()), name.data());
  });
}

}  // namespace lumen::cli
