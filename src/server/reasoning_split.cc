#include "server/reasoning_split.h"

#include <algorithm>

namespace lumen::server {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

}  // namespace

size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

ReasoningDelta ReasoningSplit::add(std::string_view text) {
  held_.append(text);
  ReasoningDelta out;
  release(out, false);
  return out;
}

ReasoningDelta ReasoningSplit::finish() {
  ReasoningDelta out;
  release(out, true);
  return out;
}

void ReasoningSplit::release(ReasoningDelta& out, bool final) {
  while (!held_.empty()) {
    switch (state_) {
      case State::Start: {
        // Leading whitespace, then either <think> or the answer.
        const size_t lead = held_.find_first_not_of(" \n\r\t");
        if (lead == std::string::npos) {
          if (final) {
            out.content += held_;
            held_.clear();
          }
          return;
        }
        const std::string_view rest = std::string_view(held_).substr(lead);
        if (rest.starts_with(kOpen)) {
          held_.erase(0, lead + kOpen.size());
          state_ = State::Reasoning;
          continue;
        }
        if (!final && kOpen.starts_with(rest)) return;  // "<thi...": wait for the rest
        state_ = State::Content;
        continue;
      }
      case State::Reasoning: {
        const size_t close = held_.find(kClose);
        if (close != std::string::npos) {
          out.reasoning += held_.substr(0, close);
          held_.erase(0, close + kClose.size());
          state_ = State::AfterReasoning;
          continue;
        }
        const size_t keep = final ? 0 : partial_tag_suffix(held_, kClose);
        out.reasoning += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      case State::AfterReasoning: {
        const size_t lead = held_.find_first_not_of("\r\n");
        if (lead == std::string::npos) {
          held_.clear();
          return;
        }
        held_.erase(0, lead);
        state_ = State::Content;
        continue;
      }
      case State::Content:
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

bool template_has_reasoning(std::string_view template_source) {
  return template_source.find(kClose) != std::string_view::npos;
}

bool prompt_opens_reasoning(std::string_view prompt_tail) {
  const size_t open = prompt_tail.rfind(kOpen);
  if (open == std::string_view::npos) return false;
  const size_t close = prompt_tail.rfind(kClose);
  return close == std::string_view::npos || close < open;
}

}  // namespace lumen::server
