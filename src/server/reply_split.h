#pragma once
// A chat reply split into reasoning and answer by the syntax its template writes: <think> tags
// (server/reasoning_split.h) or gpt-oss's harmony channels (server/harmony_split.h).
#include <string_view>

#include "server/harmony_split.h"
#include "server/reasoning_split.h"

namespace lumen::server {

enum class ReasoningSyntax { ThinkTags, Harmony };

class ReplySplit {
 public:
  // `in_reasoning`: think tags only, the prompt opened the block.
  ReplySplit(ReasoningSyntax syntax, bool in_reasoning) : syntax_(syntax), think_(in_reasoning) {}

  ReasoningDelta add(std::string_view text) {
    return syntax_ == ReasoningSyntax::Harmony ? harmony_.add(text) : think_.add(text);
  }
  ReasoningDelta finish() { return syntax_ == ReasoningSyntax::Harmony ? harmony_.finish() : think_.finish(); }

 private:
  ReasoningSyntax syntax_;
  ReasoningSplit think_;
  HarmonySplit harmony_;
};

}  // namespace lumen::server
