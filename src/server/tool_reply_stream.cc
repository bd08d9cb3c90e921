#include "server/tool_reply_stream.h"

#include "server/generic_reply_prefix.h"

namespace lumen::server {

std::string ToolReplyStream::add(std::string_view text) {
  text_ += text;
  if (format_ == ToolCallFormat::Generic) {
    // The content read so far only grows (a cut escape waits for its end), so what was sent is
    // always its prefix. Reading from the start each time costs the reply's length per token,
    // bounded by max_tokens.
    const GenericReplyPrefix prefix = read_generic_reply_prefix(text_);
    if (prefix.kind != GenericReplyPrefix::Kind::Content || prefix.content.size() <= sent_) return {};
    std::string out = prefix.content.substr(sent_);
    sent_ = prefix.content.size();
    return out;
  }
  const size_t start = tool_call_start(format_, text_);
  const size_t safe = start == std::string::npos ? text_.size() : start;
  if (safe <= sent_) return {};
  std::string out = text_.substr(sent_, safe - sent_);
  sent_ = safe;
  return out;
}

ToolReply ToolReplyStream::finish() const {
  if (format_ == ToolCallFormat::Generic) {
    ToolReply reply = parse_tool_reply(format_, text_, *request_);
    reply.content = reply.content.size() > sent_ ? reply.content.substr(sent_) : std::string();
    return reply;
  }
  return parse_tool_reply(format_, std::string_view(text_).substr(sent_), *request_);
}

}  // namespace lumen::server
