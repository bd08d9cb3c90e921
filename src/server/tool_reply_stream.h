#pragma once
// One streamed chat reply that may make tool calls: its content goes out as it comes until a
// call may begin (tool_call_start: at a possible <tool_call> for Hermes); the rest is held and
// parsed when the reply ends, so a client never receives half a call as content. A Generic
// reply is JSON from its first byte: the text of its {"content": "..."} streams as it is
// written (unescaped), and its calls come at the end.
#include <string>
#include <string_view>

#include "server/generic_reply_prefix.h"
#include "server/tool_call_format.h"
#include "server/tool_request.h"

namespace lumen::server {

class ToolReplyStream {
 public:
  ToolReplyStream(ToolCallFormat format, const ToolRequest& request) : format_(format), request_(&request) {}

  // The reply's next text; returns the content that may be sent now (possibly empty).
  std::string add(std::string_view text);
  // The reply ended: the content not sent yet, and the calls.
  ToolReply finish() const;

 private:
  // Generic: the content's text not sent yet, read on from where the last call stopped.
  std::string add_generic();

  ToolCallFormat format_;
  const ToolRequest* request_;
  std::string text_;
  size_t sent_ = 0;  // bytes of text_ sent (Generic: of its content's string body, read so far)
  // Generic: what the reply opened (Unknown until its first bytes say), and where the content's
  // string body begins in text_.
  GenericReplyPrefix::Kind generic_kind_ = GenericReplyPrefix::Kind::Unknown;
  size_t content_start_ = 0;
  size_t content_sent_ = 0;  // bytes of unescaped content sent
};

}  // namespace lumen::server
