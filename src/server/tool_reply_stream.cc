#include "server/tool_reply_stream.h"

namespace lumen::server {

std::string ToolReplyStream::add(std::string_view text) {
  text_ += text;
  const size_t start = tool_call_start(format_, text_);
  const size_t safe = start == std::string::npos ? text_.size() : start;
  if (safe <= sent_) return {};
  std::string out = text_.substr(sent_, safe - sent_);
  sent_ = safe;
  return out;
}

ToolReply ToolReplyStream::finish() const {
  return parse_tool_reply(format_, std::string_view(text_).substr(sent_), *request_);
}

}  // namespace lumen::server
