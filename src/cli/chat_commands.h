#pragma once
// `lumen chat`'s slash commands: a line that starts with "/" and a known word is a command for
// the chat itself, not a message for the model. "//text" sends "/text" as a message.
#include <string>
#include <string_view>

namespace lumen::cli {

struct ChatLine {
  enum class Kind { Message, Exit, Help, Reset, System, Image, Unknown } kind = Kind::Message;
  // Message: the text to send. System: the new system message (empty: show the current one).
  // Image: the file to attach to the next message (the rest of the line, spaces included;
  // empty: none was given). Unknown: the command as typed.
  std::string text;
};

ChatLine parse_chat_line(std::string_view line);

// What /help prints.
std::string chat_help_text();

}  // namespace lumen::cli
