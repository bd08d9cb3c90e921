#pragma once
// The harmony format's markers (gpt-oss), shared by the channel split (harmony_split.h) and the
// tool-call parser (harmony_tool_calls.h).
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

namespace lumen::server::harmony {

inline constexpr std::string_view kChannel = "<|channel|>";
inline constexpr std::string_view kMessage = "<|message|>";
inline constexpr std::string_view kRecipient = "to=";
inline constexpr std::array<std::string_view, 3> kEnds = {"<|end|>", "<|return|>", "<|call|>"};

// The first end marker at or after `from`: its offset and length (npos, 0 if none).
inline std::pair<size_t, size_t> find_end(std::string_view text, size_t from = 0) {
  std::pair<size_t, size_t> best{std::string_view::npos, 0};
  for (std::string_view end : kEnds) {
    const size_t at = text.find(end, from);
    if (at < best.first) best = {at, end.size()};
  }
  return best;
}

}  // namespace lumen::server::harmony
