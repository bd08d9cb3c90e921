#include "grammar/json_schema_primitives.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "grammar/integer_range_gbnf.h"

namespace lumen::grammar {

const char* const kJsonCharBody =
    R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))";
const char* const kIntegralPartBody = "[0] | [1-9] [0-9]{0,15}";

std::string repetition_suffix(size_t min, std::optional<size_t> max) {
  if (!max && min <= 1) return min == 0 ? "*" : "+";
  if (max && min == 0 && *max == 1) return "?";
  if (max && min == 1 && *max == 1) return "";
  std::string out(1, '{');
  out += std::to_string(min);
  if (!max || *max != min) {
    out += ',';
    if (max) out += std::to_string(*max);
  }
  out += '}';
  return out;
}

namespace {

// Years 0001-9999 (Python's date refuses year 0).
const char* const kYear = R"(([1-9] [0-9]{3} | "0" [1-9] [0-9]{2} | "00" [1-9] [0-9] | "000" [1-9]))";
// Leap years among them: divisible by 4, centuries only when divisible by 400.
const char* const kLeapYear =
    R"(([0-9] [0-9] ("0" [48] | [2468] [048] | [13579] [26]) | ([02468] [048] | [13579] [26]) "00"))";

std::string date_body() {
  // Days per month, February 29 only in leap years: every date it produces exists.
  return std::string("(") + kYear + R"( "-" (("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))" +
         R"( | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30"))" + R"( | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8]))" +
         ")) | " + kLeapYear + R"( "-02-29")";
}

const char* const kTime =
    R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ([zZ] | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))";

}  // namespace

std::optional<std::string> string_format_body(const std::string& format) {
  if (format == "date") return "\"\\\"\" (" + date_body() + ") \"\\\"\"";
  if (format == "time") return std::string("\"\\\"\" ") + kTime + " \"\\\"\"";
  if (format == "date-time") return "\"\\\"\" (" + date_body() + ") [tT] " + kTime + " \"\\\"\"";
  if (format == "uuid") {
    return R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")";
  }
  if (format == "email") {
    // A plain address: dot-separated atoms, "@", a dotted domain. Far from all of RFC 5322,
    // but each one is an address.
    // Labels as letters/digits runs joined by hyphens: one parse per address, so the matcher
    // keeps one stack.
    return R"("\"" [a-zA-Z0-9_%+\x2D]+ ("." [a-zA-Z0-9_%+\x2D]+)* "@" [a-zA-Z0-9]+ ("-"+ [a-zA-Z0-9]+)* ("." [a-zA-Z0-9]+ ("-"+ [a-zA-Z0-9]+)*)+ "\"")";
  }
  return std::nullopt;
}

namespace {

// The smallest integer >= `value` (> when `exclusive`), clamped to the digits limit.
int64_t integer_at_least(double value, bool exclusive) {
  if (value > static_cast<double>(kMaxIntegerMagnitude)) return kMaxIntegerMagnitude + 1;
  if (value < -static_cast<double>(kMaxIntegerMagnitude)) return -kMaxIntegerMagnitude;
  double c = std::ceil(value);
  if (exclusive && c == value) c += 1;
  return static_cast<int64_t>(c);
}

int64_t integer_at_most(double value, bool exclusive) {
  if (value < -static_cast<double>(kMaxIntegerMagnitude)) return -kMaxIntegerMagnitude - 1;
  if (value > static_cast<double>(kMaxIntegerMagnitude)) return kMaxIntegerMagnitude;
  double f = std::floor(value);
  if (exclusive && f == value) f -= 1;
  return static_cast<int64_t>(f);
}

std::optional<std::string> range_or_none(int64_t lo, int64_t hi) {
  lo = std::max(lo, -kMaxIntegerMagnitude);
  hi = std::min(hi, kMaxIntegerMagnitude);
  if (lo > hi) return std::nullopt;
  return gbnf_integer_range(lo, hi);
}

bool is_integral(double value) { return std::floor(value) == value && std::fabs(value) <= static_cast<double>(kMaxIntegerMagnitude); }

}  // namespace

std::optional<std::string> bounded_integer_body(const NumericBounds& bounds) {
  const int64_t lo = bounds.minimum ? integer_at_least(*bounds.minimum, bounds.exclusive_minimum) : -kMaxIntegerMagnitude;
  const int64_t hi = bounds.maximum ? integer_at_most(*bounds.maximum, bounds.exclusive_maximum) : kMaxIntegerMagnitude;
  return range_or_none(lo, hi);
}

std::optional<std::string> bounded_number_body(const NumericBounds& bounds, const std::string& decimal_rule) {
  const double lo = bounds.minimum.value_or(-INFINITY), hi = bounds.maximum.value_or(INFINITY);
  std::vector<std::string> alternatives;
  if (auto integers = bounded_integer_body(bounds)) alternatives.push_back(*integers);

  // "I.F" (I >= 0) lies in [I, I+1): allowed when I >= lo (> lo if exclusive: "I.0" is I) and
  // I + 1 <= hi.
  {
    const int64_t first = std::max<int64_t>(0, integer_at_least(lo, bounds.exclusive_minimum));
    const int64_t last = integer_at_most(hi, false) - 1;
    if (auto range = range_or_none(first, last)) alternatives.push_back(*range + " \".\" " + decimal_rule);
  }
  // "-I.F" lies in (-(I+1), -I]: allowed when -I <= hi (< hi if exclusive) and -(I+1) >= lo.
  {
    const int64_t first = std::max<int64_t>(0, integer_at_least(-hi, bounds.exclusive_maximum));
    const int64_t last = integer_at_most(-lo, false) - 1;
    if (auto range = range_or_none(first, last)) alternatives.push_back("\"-\" " + *range + " \".\" " + decimal_rule);
  }
  // At an exclusive integer bound b, "b.F" (b >= 0) or "-b.F" with a nonzero fraction is just
  // inside: "price > 0" allows 0.5.
  const std::string nonzero_fraction = R"("." "0"{0,19} [1-9] [0-9]{0,19})";
  if (bounds.minimum && bounds.exclusive_minimum && is_integral(lo) && lo >= 0 && lo + 1 <= hi) {
    alternatives.push_back(gbnf_integer_range(static_cast<int64_t>(lo), static_cast<int64_t>(lo)) + " " + nonzero_fraction);
  }
  if (bounds.maximum && bounds.exclusive_maximum && is_integral(hi) && hi <= 0 && hi - 1 >= lo) {
    alternatives.push_back("\"-\" " + gbnf_integer_range(static_cast<int64_t>(-hi), static_cast<int64_t>(-hi)) + " " +
                           nonzero_fraction);
  }
  if (alternatives.empty()) return std::nullopt;
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) {
    if (i) out += " | ";
    out += alternatives[i];
  }
  return out + ")";
}

}  // namespace lumen::grammar
