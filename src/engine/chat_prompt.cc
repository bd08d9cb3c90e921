#include "engine/chat_prompt.h"

#include <string>
#include <vector>

namespace lumen::engine {

std::vector<int32_t> chat_prompt_tokens(const chat::ChatTemplate& chat_template,
                                        const tokenizer::Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages,
                                        const ChatPromptOptions& options) {
  // The renderer tracks which bytes came from the client (messages, tools, kwargs values), through
  // filters such as trim, so the cut is exact whatever the template does to the text: client
  // ranges are tokenized as plain text, the template's own text with its control tokens.
  const chat::ChatTemplate::Rendered rendered = chat_template.render_tracked(messages, options.render);
  if (options.parse_special_in_messages) {
    return tokenizer.encode(rendered.text, {.add_special = false, .parse_special = true});
  }
  const std::string_view text = rendered.text;
  std::vector<tokenizer::TextPiece> pieces;
  pieces.reserve(rendered.client.size() * 2 + 1);
  size_t pos = 0;
  for (const auto& [begin, end] : rendered.client) {
    if (begin > pos) pieces.push_back({text.substr(pos, begin - pos), true});
    pieces.push_back({text.substr(begin, end - begin), false});
    pos = end;
  }
  if (pos < text.size()) pieces.push_back({text.substr(pos), true});
  return tokenizer.encode_pieces(pieces, false);
}

}  // namespace lumen::engine
