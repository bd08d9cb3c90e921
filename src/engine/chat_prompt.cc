#include "engine/chat_prompt.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace lumen::engine {

namespace {

// A marker no template produces and no tokenizer merges across: control characters around an
// index. Each message's text is swapped for its marker, the template renders the conversation,
// and the markers show where message text sits in the output.
std::string marker(size_t index) { return fmt::format("\x1f\x1eLUMEN{}\x1e\x1f", index); }

}  // namespace

std::vector<int32_t> chat_prompt_tokens(const chat::ChatTemplate& chat_template,
                                        const tokenizer::Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages,
                                        const ChatPromptOptions& options) {
  const std::string rendered = chat_template.render(messages, options.render);
  const tokenizer::EncodeOptions template_text{.add_special = false, .parse_special = true};
  if (options.parse_special_in_messages) return tokenizer.encode(rendered, template_text);

  // Render again with markers in place of the string contents.
  nlohmann::ordered_json marked = messages;
  std::vector<std::string> contents;
  for (auto& message : marked) {
    if (message.is_object() && message.contains("content") && message["content"].is_string()) {
      contents.push_back(message["content"].get<std::string>());
      message["content"] = marker(contents.size() - 1);
    }
  }
  const std::string skeleton = chat_template.render(marked, options.render);

  // Split the skeleton at the markers: template text between them, message text in them. The
  // split is used only if putting the contents back reproduces the real rendering exactly
  // (a template that edits contents, e.g. strips them, does not qualify).
  std::vector<std::pair<std::string, bool>> pieces;  // (text, is message text)
  std::string rebuilt;
  size_t pos = 0;
  while (pos < skeleton.size()) {
    size_t best = std::string::npos, which = 0;
    for (size_t i = 0; i < contents.size(); ++i) {
      size_t at = skeleton.find(marker(i), pos);
      if (at < best) best = at, which = i;
    }
    if (best == std::string::npos) {
      pieces.emplace_back(skeleton.substr(pos), false);
      rebuilt += skeleton.substr(pos);
      break;
    }
    pieces.emplace_back(skeleton.substr(pos, best - pos), false);
    pieces.emplace_back(contents[which], true);
    rebuilt += skeleton.substr(pos, best - pos) + contents[which];
    pos = best + marker(which).size();
  }
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
