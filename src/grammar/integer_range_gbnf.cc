#include "grammar/integer_range_gbnf.h"

#include <string_view>
#include <vector>

namespace lumen::grammar {
namespace {

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("[") + lo + "]";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t count) {
  if (count == 0) return "";
  if (count == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(count) + "}";
}

bool all_of(std::string_view digits, char c) { return digits.find_first_not_of(c) == std::string_view::npos; }

void join(std::string& out, const std::string& part) {
  if (part.empty()) return;
  if (!out.empty()) out += ' ';
  out += part;
}

// Alternatives matching the digit strings of length lo.size() between lo and hi (equal
// lengths, lo <= hi, leading zeros allowed: callers fix the first digit's range).
void same_length_range(std::string_view lo, std::string_view hi, std::vector<std::string>& out) {
  if (lo.empty()) {
    out.emplace_back("");
    return;
  }
  const size_t rest = lo.size() - 1;
  if (lo[0] == hi[0]) {
    std::vector<std::string> tails;
    same_length_range(lo.substr(1), hi.substr(1), tails);
    for (const auto& tail : tails) {
      std::string alternative = digit_class(lo[0], lo[0]);
      join(alternative, tail);
      out.push_back(alternative);
    }
    return;
  }
  // lo[0] < hi[0]: the low edge, the full middle, the high edge. An edge whose tail spans every
  // digit string joins the middle.
  char middle_lo = static_cast<char>(lo[0] + 1), middle_hi = static_cast<char>(hi[0] - 1);
  if (all_of(lo.substr(1), '0')) {
    middle_lo = lo[0];
  } else {
    std::vector<std::string> tails;
    same_length_range(lo.substr(1), std::string(rest, '9'), tails);
    for (const auto& tail : tails) {
      std::string alternative = digit_class(lo[0], lo[0]);
      join(alternative, tail);
      out.push_back(alternative);
    }
  }
  const bool high_edge_full = all_of(hi.substr(1), '9');
  if (high_edge_full) middle_hi = hi[0];
  if (middle_lo <= middle_hi) {
    std::string alternative = digit_class(middle_lo, middle_hi);
    join(alternative, any_digits(rest));
    out.push_back(alternative);
  }
  if (!high_edge_full) {
    std::vector<std::string> tails;
    same_length_range(std::string(rest, '0'), hi.substr(1), tails);
    for (const auto& tail : tails) {
      std::string alternative = digit_class(hi[0], hi[0]);
      join(alternative, tail);
      out.push_back(alternative);
    }
  }
}

// Alternatives for the canonical forms of the non-negative integers in [lo, hi].
void natural_range(uint64_t lo, uint64_t hi, std::vector<std::string>& out) {
  const std::string lo_text = std::to_string(lo), hi_text = std::to_string(hi);
  for (size_t length = lo_text.size(); length <= hi_text.size(); ++length) {
    // This length's slice of the range: [10^(length-1), 10^length - 1] (0 for length 1).
    std::string first = lo_text;
    if (length != lo_text.size()) {
      first.assign(length, '0');
      first[0] = '1';
    }
    std::string last = length == hi_text.size() ? hi_text : std::string(length, '9');
    same_length_range(first, last, out);
  }
}

std::string alternation(const std::vector<std::string>& alternatives) {
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) {
    if (i) out += " | ";
    out += alternatives[i];
  }
  return out + ")";
}

}  // namespace

std::string gbnf_integer_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alternatives;
  if (lo < 0) {
    // Negative part: "-" then the magnitudes [max(1, -hi), -lo].
    const uint64_t magnitude_lo = hi < 0 ? static_cast<uint64_t>(-hi) : 1;
    std::vector<std::string> magnitudes;
    natural_range(magnitude_lo, static_cast<uint64_t>(-lo), magnitudes);
    alternatives.push_back("\"-\" " + alternation(magnitudes));
  }
  if (hi >= 0) natural_range(lo < 0 ? 0 : static_cast<uint64_t>(lo), static_cast<uint64_t>(hi), alternatives);
  return alternation(alternatives);
}

}  // namespace lumen::grammar
