#pragma once
// GBNF for JSON's leaf values as a schema constrains them: strings (lengths, formats), numbers
// and integers (bounds). Each returns the body of a rule that matches the value alone (no
// trailing whitespace). `char_rule` names the rule for one string character.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace lumen::grammar {

// One character of JSON string content, raw or escaped. \u escapes of surrogates are left out:
// a pair would count as one character to a validator but two to the grammar's lengths.
extern const char* const kJsonCharBody;
extern const char* const kIntegralPartBody;  // [0] | [1-9] [0-9]{0,15}

// `{m}`, `{m,}`, `{m,n}`, `*`, `+`, `?` or "" for a repetition of min..max (nullopt = unbounded).
std::string repetition_suffix(size_t min, std::optional<size_t> max);

// The body for a string `format`, or nullopt for a format without a grammar (a plain string).
std::optional<std::string> string_format_body(const std::string& format);

struct NumericBounds {
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
};

// The canonical integers within the bounds (and within kMaxIntegerDigits digits); nullopt when
// there are none.
std::optional<std::string> bounded_integer_body(const NumericBounds& bounds);
// Numbers (integers and decimals, no exponent) within the bounds: exact at integer bounds,
// conservative between them (a decimal is allowed where its whole unit interval is inside).
// `decimal_rule` is a rule for the digits after the point; nullopt when nothing fits.
std::optional<std::string> bounded_number_body(const NumericBounds& bounds, const std::string& decimal_rule);

}  // namespace lumen::grammar
