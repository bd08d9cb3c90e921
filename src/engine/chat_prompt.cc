#include "engine/chat_prompt.h"

#include <string>
#include <vector>

#include "lumen/error.h"

namespace lumen::engine {

namespace {

// Where the final message's text ends in the rendering: the end of the last stretch of client
// text, which must be (a trimmed part of) that message's content. The renderer tracks client
// bytes through filters, so this holds whatever the template does around the text, and a
// template that ends the conversation with something else (a tools listing) is refused rather
// than cut in the wrong place.
size_t end_of_final_message(const chat::ChatTemplate::Rendered& rendered, const nlohmann::ordered_json& messages) {
  // Each of these is the request's fault (ChatRefused: a 400), not the template's.
  if (!messages.is_array() || messages.empty()) throw ChatRefused("continue_final_message needs a final message to continue");
  const nlohmann::ordered_json& last = messages.back();
  const auto content = last.find("content");
  if (last.value("role", "") != "assistant" || content == last.end() || !content->is_string() ||
      content->get<std::string>().empty()) {
    throw ChatRefused("continue_final_message continues the final message, which must be an assistant's with text");
  }
  if (rendered.client.empty()) throw ChatRefused("continue_final_message: the chat template does not show the final message");
  const auto [begin, end] = rendered.client.back();
  const std::string_view shown = std::string_view(rendered.text).substr(begin, end - begin);
  if (shown.empty() || content->get<std::string>().find(shown) == std::string::npos) {
    throw ChatRefused("continue_final_message: the chat template does not end the conversation with the final message");
  }
  return end;
}

}  // namespace

std::vector<int32_t> chat_prompt_tokens(const chat::ChatTemplate& chat_template,
                                        const tokenizer::Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages,
                                        const ChatPromptOptions& options) {
  // The renderer tracks which bytes came from the client (messages, tools, kwargs values), through
  // filters such as trim, so the cut is exact whatever the template does to the text: client
  // ranges are tokenized as plain text, the template's own text with its control tokens.
  const chat::ChatTemplate::Rendered rendered = chat_template.render_tracked(messages, options.render);
  std::string_view text = rendered.text;
  if (options.continue_final_message) text = text.substr(0, end_of_final_message(rendered, messages));
  if (options.parse_special_in_messages) {
    return tokenizer.encode(text, {.add_special = false, .parse_special = true});
  }
  std::vector<tokenizer::TextPiece> pieces;
  pieces.reserve(rendered.client.size() * 2 + 1);
  size_t pos = 0;
  for (const auto& [begin, end] : rendered.client) {
    if (begin >= text.size()) break;  // past a continued final message
    if (begin > pos) pieces.push_back({text.substr(pos, begin - pos), true});
    pieces.push_back({text.substr(begin, end - begin), false});
    pos = end;
  }
  if (pos < text.size()) pieces.push_back({text.substr(pos), true});
  return tokenizer.encode_pieces(pieces, false);
}

}  // namespace lumen::engine
