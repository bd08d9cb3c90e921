#pragma once
// GBNF for the decimal integers in a range, digit by digit (JSON Schema integer bounds: a
// grammar cannot compare numbers, so the range is spelled out as digit classes; the size is
// linear in the number of digits).
#include <cstdint>
#include <string>

namespace lumen::grammar {

// Integers a grammar may produce have at most this many digits (as llama.cpp: unbounded JSON
// integers would leave the grammar free to run forever, and doubles lose integers past 2^53).
constexpr int kMaxIntegerDigits = 16;
constexpr int64_t kMaxIntegerMagnitude = 9'999'999'999'999'999;  // 16 nines

// An expression (parenthesised alternation) matching exactly the canonical decimal forms (no
// leading zeros, no "-0") of the integers in [lo, hi]. Requires lo <= hi and both within
// +-kMaxIntegerMagnitude.
std::string gbnf_integer_range(int64_t lo, int64_t hi);

}  // namespace lumen::grammar
