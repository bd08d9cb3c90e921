#pragma once
// One streamed chat reply that may make tool calls: its content goes out as it comes until a
// call may begin (tool_call_start: at once for Generic replies, which are JSON, at a possible
// <tool_call> for Hermes); the rest is held and parsed when the reply ends, so a client never
// receives half a call as content.
#include <string>
#include <string_view>

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
  ToolCallFormat format_;
  const ToolRequest* request_;
  std::string text_;
  size_t sent_ = 0;  // bytes of text_ sent as content
};

}  // namespace lumen::server
