#include "chat/chat_template.h"

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/parser.h"
#include "chat/py_string.h"
#include "chat/value_json.h"
#include "util/error.h"

namespace lumen::chat {

namespace {
// Far beyond any real template (the largest are ~20 KB); bounds parse time and memory.
constexpr size_t kMaxTemplateBytes = size_t{1} << 20;

// The variables render() sets itself; the built-in functions are checked separately.
constexpr std::string_view kRenderVariables[] = {"messages", "tools", "documents", "add_generation_prompt",
                                                 "bos_token", "eos_token", "loop"};
}  // namespace

bool is_reserved_variable(std::string_view name) {
  for (auto reserved : kRenderVariables) {
    if (name == reserved) return true;
  }
  return global_function(name).has_value();
}

ChatTemplate ChatTemplate::parse(std::string_view text) {
  if (text.size() > kMaxTemplateBytes) fail("chat template is too large ({} bytes)", text.size());
  if (!utf8_valid(text)) fail("chat template is not valid UTF-8");
  try {
    ChatTemplate t;
    t.body_ = std::make_shared<const Body>(parse_template(text));
    return t;
  } catch (const Error& e) {
    throw Error(std::string("chat template: ") + e.what());
  }
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const ChatTemplateOptions& options) const {
  return render_tracked(messages, options).text;
}

ChatTemplate::Rendered ChatTemplate::render_tracked(const nlohmann::ordered_json& messages,
                                                    const ChatTemplateOptions& options) const {
  if (!messages.is_array()) fail("chat messages must be a JSON array");
  if (!options.extra_context.is_object()) fail("chat template context must be a JSON object");
  if (!utf8_valid(options.bos_token) || !utf8_valid(options.eos_token)) {
    fail("special token text is not valid UTF-8");
  }
  Scope globals;
  globals.emplace_back("messages", from_json(messages, true));
  globals.emplace_back("tools", options.tools ? from_json(*options.tools, true) : Value(None{}));
  globals.emplace_back("documents", Value(None{}));
  globals.emplace_back("add_generation_prompt", Value(options.add_generation_prompt));
  globals.emplace_back("bos_token", Value(options.bos_token));
  globals.emplace_back("eos_token", Value(options.eos_token));
  for (const auto& [k, v] : options.extra_context.items()) {
    if (is_reserved_variable(k)) throw RenderRefused(fmt::format("chat template variable '{}' cannot be overridden", k));
    globals.emplace_back(k, from_json(v, true));
  }
  Runtime rt(options.limits, options.now ? *options.now : std::time(nullptr));
  // Reports what the render held once every value it built is gone (the interpreter's scopes
  // and any temporaries an exception unwound), so a leak in the accounting shows.
  struct ReportUsage {
    const Runtime& rt;
    RenderUsage* usage;
    ~ReportUsage() {
      if (usage) *usage = {rt.budget().peak(), rt.budget().held()};
    }
  } report{rt, options.usage};
  try {
    // The scope is inside the try and outlives the interpreter: values the conversation brought
    // (converted above) are not charged, everything the template builds is.
    BudgetScope budget_scope(rt.budget());
    Interpreter interpreter(rt, std::move(globals));
    TaintedText out = interpreter.render(*body_);
    return Rendered{std::move(out.text), std::move(out.taint)};
  } catch (const RenderRefused& e) {
    throw RenderRefused(fmt::format("chat template line {}: {}", rt.line, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("chat template line {}: {}", rt.line, e.what()));
  }
}

std::string render_chat(std::string_view template_text, const nlohmann::ordered_json& messages,
                        const ChatTemplateOptions& options) {
  return ChatTemplate::parse(template_text).render(messages, options);
}

}  // namespace lumen::chat
