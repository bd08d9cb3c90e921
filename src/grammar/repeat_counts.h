#pragma once
// Folding a nested repetition of one character set into one repetition (regex_to_gbnf.cc).
#include <cstddef>
#include <limits>

namespace lumen::grammar {

// A count with no upper bound (`X*`, `X{2,}`).
inline constexpr size_t kUnboundedCount = std::numeric_limits<size_t>::max();

// Nested repetition of one set, (X{a,b}){c,d}, matches X k times for k in the union of
// [j*a, j*b] over j in [c, d]. When that union is one interval it is X{c*a, d*b}: the same
// strings through one repetition, whose parser keeps one stack per count instead of one per
// (outer, inner) split: an ambiguous nesting costs the matcher (a, b) x (c, d) stacks per
// character and a context cache per split (issue 47). Returns false when the union has gaps
// (`(a{3}){0,2}` is 0, 3 or 6 a's), which stays nested.
bool merge_repeat_counts(size_t a, size_t b, size_t c, size_t d, size_t& min, size_t& max);

}  // namespace lumen::grammar
