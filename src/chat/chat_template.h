#pragma once
// Chat templates: render a model's `tokenizer.chat_template` (Jinja) for a conversation the way
// Hugging Face transformers does (jinja2 sandbox, trim_blocks, lstrip_blocks, its tojson,
// raise_exception and strftime_now), so the prompt Lumen feeds a model is byte-for-byte the one
// the model was trained with. A template outside the supported Jinja subset, or one that
// raises, is a lumen::Error naming the line.
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "chat/runtime.h"

namespace lumen::chat {

struct Stmt;

// What one render used, for tests and measurements: the most its values held at once and what
// they still held when it ended (0: everything charged was freed).
struct RenderUsage {
  size_t peak_held_bytes = 0;
  size_t held_bytes_after = 0;
};

struct ChatTemplateOptions {
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // The `tools` variable; absent means None, as transformers passes it.
  std::optional<nlohmann::ordered_json> tools;
  // More top-level variables (e.g. enable_thinking, date_string). A reserved name
  // (is_reserved_variable) is an error.
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  // The clock strftime_now() reads; nullopt = now.
  std::optional<std::time_t> now;
  RenderLimits limits;
  // Filled when the render ends, whether it succeeded or not; null: not reported.
  RenderUsage* usage = nullptr;
};

class ChatTemplate {
 public:
  // Parses once; the template can then render many conversations (const, thread-safe).
  static ChatTemplate parse(std::string_view text);

  // `messages` is the OpenAI-style list of {"role", "content", ...} objects.
  std::string render(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const;
  // The same text, with the byte ranges that came from the caller's messages, tools and
  // extra_context (client text); the rest is the template's own (and bos/eos) text.
  struct Rendered {
    std::string text;
    Taint client;
  };
  Rendered render_tracked(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// Whether `name` is a variable the renderer itself provides (messages, tools, bos_token, ...,
// and the built-in functions): caller-supplied context may not replace it, or a client could
// swap the conversation for text that skips the protections given to messages.
bool is_reserved_variable(std::string_view name);

std::string render_chat(std::string_view template_text, const nlohmann::ordered_json& messages,
                        const ChatTemplateOptions& options);

}  // namespace lumen::chat
