#include "cli/http_range.h"

#include <cctype>
#include <charconv>

namespace lumen::cli {

namespace {

void skip_spaces(std::string_view& text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
}

std::optional<uint64_t> take_number(std::string_view& text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

bool take_char(std::string_view& text, char c) {
  skip_spaces(text);
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  skip_spaces(text);
  return true;
}

}  // namespace

std::optional<ContentRange> parse_content_range(std::string_view value) {
  skip_spaces(value);
  constexpr std::string_view kUnit = "bytes";
  if (value.size() < kUnit.size()) return std::nullopt;
  for (size_t i = 0; i < kUnit.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kUnit[i]) return std::nullopt;
  }
  value.remove_prefix(kUnit.size());
  if (value.empty() || (value.front() != ' ' && value.front() != '\t')) return std::nullopt;
  skip_spaces(value);
  ContentRange range;
  auto first = take_number(value);
  if (!first || !take_char(value, '-')) return std::nullopt;
  auto last = take_number(value);
  if (!last || *last < *first || !take_char(value, '/')) return std::nullopt;
  range.first = *first;
  range.last = *last;
  if (!value.empty() && value.front() == '*') {
    value.remove_prefix(1);
  } else {
    auto total = take_number(value);
    if (!total || *total <= *last) return std::nullopt;
    range.total = total;
  }
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.remove_suffix(1);
  if (!value.empty()) return std::nullopt;
  return range;
}

ResumeAction resume_action(long status, const std::optional<ContentRange>& range, uint64_t have) {
  if (status == 200) return ResumeAction::kRestart;
  if (status == 206 && range && range->first == have) return ResumeAction::kAppend;
  return ResumeAction::kReject;
}

}  // namespace lumen::cli
