#pragma once
// A gpt-oss reply in OpenAI's harmony format split into its reasoning and its answer, as
// llama-server and vLLM return them: each message of the reply is
//   [<|start|>assistant]<|channel|>NAME[ to=RECIPIENT][ <|constrain|>FORMAT]<|message|>TEXT<|end|>
// (the last one ends at <|return|> or <|call|>, end-of-generation tokens whose text the server
// leaves out: SamplingParams::stop_token_text); the "analysis" channel's text goes to reasoning_content, the "final"
// channel's and a "commentary" preamble's to content. A message addressed to a recipient (a tool call) is kept whole in
// content, its header rewritten in one form (harmony_call_header), for the tool-call parser
// (server/harmony_tool_calls.h); the reply's first header may start with the recipient
// (`to=functions.NAME<|channel|>...`, after the prompt's <|start|>assistant). Text before any header (a model ignoring
// the format) is content. The reply's control tokens must be in its text (skip_special_tokens off). Text is released as
// soon as it cannot be part of a marker, so a stream is held back by at most a marker's length (and a header until its
// <|message|>).
#include <string>
#include <string_view>

#include "server/reasoning_split.h"

namespace lumen::server {

class HarmonySplit {
 public:
  // The reply's next text; returns what may be sent now.
  ReasoningDelta add(std::string_view text);
  // The reply ended: whatever was held back (an unfinished header is dropped).
  ReasoningDelta finish();

 private:
  // Header: between messages, reading the next one's header up to <|message|>. Body: inside a
  // message, up to its end marker. Raw: a tool call, kept as text.
  enum class State { Header, Body };
  enum class Target { Reasoning, Content, Raw };
  void release(ReasoningDelta& out, bool final);
  void emit(ReasoningDelta& out, std::string_view text) const;

  State state_ = State::Header;
  bool first_header_ = true;  // nothing read yet: a header may begin with "to="
  Target target_ = Target::Content;
  std::string held_;
};

// Whether a chat template writes harmony messages (its source names <|channel|> and
// <|message|>): then replies are split by HarmonySplit instead of by <think> tags.
bool template_is_harmony(std::string_view template_source);

}  // namespace lumen::server
