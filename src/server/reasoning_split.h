#pragma once
// A reasoning model's reply split into its reasoning and its answer, as llama-server's
// "deepseek" reasoning format and vLLM's reasoning parsers return them: the text between
// <think> and </think> goes to message.reasoning_content (delta.reasoning_content when
// streamed), the rest to content. Qwen3 opens the block itself; DeepSeek-R1's templates (and
// Qwen3's with a prompt ending in "<think>\n") open it in the prompt, so the reply starts inside
// it. Text is released as soon as it cannot be part of a tag, so a stream is held back by at
// most a tag's length.
#include <string>
#include <string_view>

namespace lumen::server {

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningSplit {
 public:
  // `in_reasoning`: the prompt opened the block (prompt_opens_reasoning).
  explicit ReasoningSplit(bool in_reasoning) : state_(in_reasoning ? State::Reasoning : State::Start) {}

  // The reply's next text; returns what may be sent now.
  ReasoningDelta add(std::string_view text);
  // The reply ended: whatever was held back. A block never closed is all reasoning.
  ReasoningDelta finish();

 private:
  // Start: before any content (whitespace is held: a <think> may follow). Reasoning: inside the
  // block. AfterReasoning: the block closed; the newlines that follow </think> are dropped.
  // Content: the answer.
  enum class State { Start, Reasoning, AfterReasoning, Content };
  void release(ReasoningDelta& out, bool final);

  State state_;
  std::string held_;  // text not released yet
};

// The length of the longest suffix of `text` that is a proper prefix of `tag`: bytes that may
// still become the tag once more text comes (a stream holds them back).
size_t partial_tag_suffix(std::string_view text, std::string_view tag);

// Whether a chat template writes reasoning blocks (its source names </think>): only then does a
// reply get split.
bool template_has_reasoning(std::string_view template_source);
// Whether a rendered prompt's end leaves the model inside a reasoning block: its last <think>
// comes after its last </think>.
bool prompt_opens_reasoning(std::string_view prompt_tail);

}  // namespace lumen::server
