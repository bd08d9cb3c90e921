#include "server/tool_reply_stream.h"

namespace lumen::server {

std::string ToolReplyStream::add(std::string_view text) {
  text_ += text;
  if (format_ == ToolCallFormat::Generic) return add_generic();
  // Hermes, Harmony: a call cannot begin before what was sent, so look from there on (once over the
  // reply, not once per token from its start). Llama 3 decides on the reply's first bytes.
  const size_t from = format_ == ToolCallFormat::Hermes || format_ == ToolCallFormat::Harmony ? sent_ : 0;
  const size_t start = tool_call_start(format_, std::string_view(text_).substr(from));
  const size_t safe = start == std::string::npos ? text_.size() : from + start;
  if (safe <= sent_) return {};
  std::string out = text_.substr(sent_, safe - sent_);
  sent_ = safe;
  return out;
}

std::string ToolReplyStream::add_generic() {
  if (generic_kind_ == GenericReplyPrefix::Kind::Unknown) {
    // The opening is a few bytes ({"content":" or {"tool_calls":[): read until it is known.
    const GenericReplyPrefix opening = read_generic_reply_prefix(text_, true);
    generic_kind_ = opening.kind;
    content_start_ = sent_ = opening.content_start;
  }
  if (generic_kind_ != GenericReplyPrefix::Kind::Content) return {};  // calls come at the end
  // The content's string, from where the last read stopped (a cut escape waits for its end).
  bool closed = false;
  const size_t run = whole_string_run(std::string_view(text_).substr(sent_), closed);
  std::string out = unescape_string_run(std::string_view(text_).substr(sent_, run));
  sent_ += run;
  content_sent_ += out.size();
  return out;
}

ToolReply ToolReplyStream::finish() const {
  if (format_ == ToolCallFormat::Generic) {
    ToolReply reply = parse_tool_reply(format_, text_, *request_);
    reply.content = reply.content.size() > content_sent_ ? reply.content.substr(content_sent_) : std::string();
    return reply;
  }
  return parse_tool_reply(format_, std::string_view(text_).substr(sent_), *request_);
}

}  // namespace lumen::server
