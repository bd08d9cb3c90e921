// Hostile chat templates and hostile conversations: the first input byte picks a built-in
// template or takes the rest as a template of its own; the rest (after a NUL) is read as a JSON
// conversation. Anything but a render or a lumen::Error is a finding, and a render must keep the
// guarantee the prompt builder relies on: client ranges are sorted, disjoint and in bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/builtin_templates.h"
#include "chat/chat_template.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t split = input.find('\0');
  std::string_view template_part = input.substr(0, split);
  std::string_view messages_part = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  const auto names = lumen::chat::builtin_chat_template_names();
  try {
    std::string text(template_part);
    if (data[0] < names.size()) text = std::string(*lumen::chat::builtin_chat_template(names[data[0]]));
    auto tmpl = lumen::chat::ChatTemplate::parse(text);
    nlohmann::ordered_json messages = nlohmann::ordered_json::parse(messages_part, nullptr, false);
    if (messages.is_discarded()) {
      messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", std::string(messages_part)}}});
    }
    lumen::chat::ChatTemplateOptions options;
    options.add_generation_prompt = (data[0] & 0x80) != 0;
    options.now = 0;
    options.limits.max_output_bytes = size_t{1} << 20;
    options.limits.max_steps = 200'000;
    auto rendered = tmpl.render_tracked(messages, options);
    size_t last = 0;
    for (const auto& [b, e] : rendered.client) {
      if (b < last || e <= b || e > rendered.text.size()) std::abort();
      last = e;
    }
  } catch (const lumen::Error&) {
  }
  return 0;
}
