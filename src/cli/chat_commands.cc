#include "cli/chat_commands.h"

namespace lumen::cli {

ChatLine parse_chat_line(std::string_view line) {
  if (line.size() >= 2 && line[0] == '/' && line[1] == '/')
    return {ChatLine::Kind::Message, std::string(line.substr(1))};
  if (line.empty() || line[0] != '/') return {ChatLine::Kind::Message, std::string(line)};
  const size_t space = line.find(' ');
  const std::string_view word = line.substr(0, space);
  std::string_view rest = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (word == "/exit" || word == "/quit") return {ChatLine::Kind::Exit, {}};
  if (word == "/help" || word == "/?") return {ChatLine::Kind::Help, {}};
  if (word == "/reset" || word == "/clear") return {ChatLine::Kind::Reset, {}};
  if (word == "/system") return {ChatLine::Kind::System, std::string(rest)};
  if (word == "/image") {
    // A file name may hold spaces but hardly ends in one (a terminal's paste often adds one).
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
    return {ChatLine::Kind::Image, std::string(rest)};
  }
  return {ChatLine::Kind::Unknown, std::string(word)};
}

std::string chat_help_text() {
  return "/help           this list\n"
         "/reset          forget the conversation (the system message stays)\n"
         "/system TEXT    a new system message, and a new conversation under it\n"
         "/system         show the system message\n"
         "/image PATH     attach an image file (PNG, JPEG, WebP, GIF) to the next message (needs --mmproj)\n"
         "/exit           quit (also Ctrl-D; Ctrl-C stops a reply being written)\n"
         "//TEXT          send TEXT starting with one /\n";
}

}  // namespace lumen::cli
