#include "engine/chat_prompt.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace lumen::engine {

namespace {

// A marker no template produces and no tokenizer merges across: control characters around an
// index. Each string the caller supplied is swapped for its marker, the template renders the
// conversation, and the markers show where caller text sits in the output.
std::string marker(size_t index) { return fmt::format("\x1f\x1eLUMEN{}\x1e\x1f", index); }

}  // namespace

std::vector<int32_t> chat_prompt_tokens(const chat::ChatTemplate& chat_template,
                                        const tokenizer::Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages,
                                        const ChatPromptOptions& options) {
  const std::string rendered = chat_template.render(messages, options.render);
  const tokenizer::EncodeOptions template_text{.add_special = false, .parse_special = true};
  if (options.parse_special_in_messages) return tokenizer.encode(rendered, template_text);

  // Render again with markers in place of every string the caller supplied: each message's
  // content, name and tool_call_id, and the string values of the extra template variables.
  nlohmann::ordered_json marked = messages;
  std::vector<std::string> contents;
  auto mark = [&](nlohmann::ordered_json& value) {
    if (!value.is_string()) return;
    contents.push_back(value.get<std::string>());
    value = marker(contents.size() - 1);
  };
  for (auto& message : marked) {
    if (!message.is_object()) continue;
    for (const char* field : {"content", "name", "tool_call_id"}) {
      if (auto it = message.find(field); it != message.end()) mark(*it);
    }
  }
  chat::ChatTemplateOptions marked_options = options.render;
  if (marked_options.extra_context.is_object()) {
    for (auto& [key, value] : marked_options.extra_context.items()) mark(value);
  }
  const std::string skeleton = chat_template.render(marked, marked_options);

  // Split the skeleton at the markers: template text between them, message text in them. One
  // pass over the skeleton (the marker prefix is found, then its index read), so the cost is
  // linear in the rendering whatever the number of messages. The split is used only if putting
  // the contents back reproduces the real rendering exactly (a template that edits contents,
  // e.g. strips them, does not qualify).
  static const std::string kPrefix = "\x1f\x1eLUMEN";
  static const std::string kSuffix = "\x1e\x1f";
  std::vector<std::pair<std::string, bool>> pieces;  // (text, is message text)
  std::string rebuilt;
  size_t pos = 0;
  for (size_t at = skeleton.find(kPrefix); at != std::string::npos; at = skeleton.find(kPrefix, at + 1)) {
    size_t digits = at + kPrefix.size(), end = digits;
    size_t index = 0;
    while (end < skeleton.size() && end - digits < 9 && skeleton[end] >= '0' && skeleton[end] <= '9') {
      index = index * 10 + static_cast<size_t>(skeleton[end] - '0');
      ++end;
    }
    if (end == digits || skeleton.compare(end, kSuffix.size(), kSuffix) != 0 || index >= contents.size()) continue;
    pieces.emplace_back(skeleton.substr(pos, at - pos), false);
    pieces.emplace_back(contents[index], true);
    rebuilt.append(skeleton, pos, at - pos);
    rebuilt += contents[index];
    pos = end + kSuffix.size();
    at = pos - 1;
  }
  pieces.emplace_back(skeleton.substr(pos), false);
  rebuilt.append(skeleton, pos, std::string::npos);
  if (rebuilt != rendered) {
    // The template transformed message text: it cannot be told apart from the template's own.
    // Tokenize everything as text, markers included, so nothing a user typed turns into a
    // control token; the template's markers may then be split into ordinary tokens.
    return tokenizer.encode(rendered, {.add_special = false, .parse_special = false});
  }
  std::vector<tokenizer::TextPiece> parts;
  for (const auto& [text, is_message] : pieces) parts.push_back({text, !is_message});
  return tokenizer.encode_pieces(parts, false);
}

}  // namespace lumen::engine
