#include "server/harmony_split.h"

#include <algorithm>
#include <array>

#include "server/harmony_markers.h"
#include "server/harmony_tool_calls.h"

namespace lumen::server {

namespace {

using harmony::find_end;
using harmony::kChannel;
using harmony::kEnds;
using harmony::kMessage;
using harmony::kRecipient;

// Bytes at the end of `text` that may still become an end marker.
size_t partial_end_suffix(std::string_view text) {
  size_t keep = 0;
  for (std::string_view end : kEnds) keep = std::max(keep, partial_tag_suffix(text, end));
  return keep;
}

}  // namespace

ReasoningDelta HarmonySplit::add(std::string_view text) {
  held_.append(text);
  ReasoningDelta out;
  release(out, false);
  return out;
}

ReasoningDelta HarmonySplit::finish() {
  ReasoningDelta out;
  release(out, true);
  return out;
}

void HarmonySplit::emit(ReasoningDelta& out, std::string_view text) const {
  (target_ == Target::Reasoning ? out.reasoning : out.content).append(text);
}

void HarmonySplit::release(ReasoningDelta& out, bool final) {
  while (!held_.empty()) {
    if (state_ == State::Header) {
      const size_t lead = held_.find_first_not_of(" \n\r\t");
      if (lead == std::string::npos) {
        if (final) held_.clear();
        return;
      }
      // Text that is not a marker where a header should start: the model wrote plain text. The
      // reply's first header may also start with a recipient, the rest of the prompt's
      // "<|start|>assistant" role (`to=functions.NAME<|channel|>...`).
      const std::string_view at_lead = std::string_view(held_).substr(lead);
      const bool marker = at_lead.starts_with("<|") || at_lead == "<";
      const bool recipient = first_header_ && (at_lead.starts_with(kRecipient) ||
                                               (!final && std::string_view(kRecipient).starts_with(at_lead)));
      if (!marker && !recipient) {
        target_ = Target::Content;
        state_ = State::Body;
        first_header_ = false;
        continue;
      }
      const size_t message = held_.find(kMessage);
      if (message == std::string::npos) {
        if (final) held_.clear();  // a header the reply never finished
        return;
      }
      const std::string_view header = std::string_view(held_).substr(0, message);
      const size_t channel_at = header.find(kChannel);
      std::string_view channel;
      if (channel_at != std::string_view::npos) {
        channel = header.substr(channel_at + kChannel.size());
        channel = channel.substr(0, std::min(channel.find(' '), channel.find("<|")));
      }
      const std::string_view to = harmony_recipient(header);
      first_header_ = false;
      if (!to.empty() && to != "assistant") {
        // A tool call: its header (in one form, whatever the model wrote) and its arguments
        // stay as text, for the tool-call parser (server/harmony_tool_calls.h).
        target_ = Target::Raw;
        out.content += harmony_call_header(channel, to);
      } else {
        target_ = channel == "analysis" ? Target::Reasoning : Target::Content;
      }
      held_.erase(0, message + kMessage.size());
      state_ = State::Body;
      continue;
    }
    const auto [end, length] = find_end(held_);
    if (end != std::string::npos) {
      emit(out, std::string_view(held_).substr(0, end));
      if (target_ == Target::Raw) out.content.append(held_, end, length);
      held_.erase(0, end + length);
      state_ = State::Header;
      first_header_ = false;
      continue;
    }
    const size_t keep = final ? 0 : partial_end_suffix(held_);
    emit(out, std::string_view(held_).substr(0, held_.size() - keep));
    held_.erase(0, held_.size() - keep);
    return;
  }
}

bool template_is_harmony(std::string_view template_source) {
  return template_source.find(kChannel) != std::string_view::npos &&
         template_source.find(kMessage) != std::string_view::npos;
}

}  // namespace lumen::server
