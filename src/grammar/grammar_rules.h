#pragma once
// The parsed form of a grammar (what parse_gbnf builds and the matcher runs): every rule's
// alternatives laid out in one flat array of elements, each alternative ending with an kEnd
// element, so that a grammar position is one integer (an index into `elements`) and
// "the next element" is position + 1.
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace lumen::grammar {

struct CodepointRange {
  uint32_t lo;
  uint32_t hi;  // inclusive
};

enum class ElementKind : uint8_t {
  kChars,    // one code point out of a set (a literal's character, a class, `.`)
  kRuleRef,  // the rule `rule`
  kEnd,      // the end of an alternative
};

struct Element {
  ElementKind kind = ElementKind::kEnd;
  bool negated = false;         // kChars: the set is everything but the ranges
  uint32_t rule = 0;            // kRuleRef
  uint32_t ranges_begin = 0;    // kChars: sorted, merged ranges in Grammar::ranges
  uint32_t ranges_end = 0;
  uint32_t ascii[4] = {0, 0, 0, 0};  // kChars: membership of code points < 128, negation applied
};

struct Rule {
  std::string name;
  uint32_t alternatives_begin = 0;  // into Grammar::alternative_starts
  uint32_t alternatives_end = 0;
  size_t offset = 0;  // where the rule is defined in the text (for messages)
};

class Grammar {
 public:
  std::vector<Element> elements;
  std::vector<CodepointRange> ranges;
  std::vector<uint32_t> alternative_starts;  // first element of each alternative
  std::vector<Rule> rules;
  uint32_t root = 0;

  // Whether the code point is in the set of the kChars element at `pos`.
  bool matches(uint32_t pos, uint32_t cp) const {
    const Element& e = elements[pos];
    if (cp < 128) return (e.ascii[cp >> 5] >> (cp & 31)) & 1u;
    return in_ranges(e, cp, cp) != e.negated;
  }
  // Whether some code point in [lo, hi] is in the set (a partial UTF-8 sequence's range).
  bool may_match(uint32_t pos, uint32_t lo, uint32_t hi) const {
    const Element& e = elements[pos];
    if (!e.negated) return in_ranges(e, lo, hi);
    // Ranges are merged, so the complement misses all of [lo, hi] only if one range covers it.
    for (uint32_t i = e.ranges_begin; i < e.ranges_end; ++i)
      if (ranges[i].lo <= lo && hi <= ranges[i].hi) return false;
    return true;
  }

 private:
  // Whether some range overlaps [lo, hi].
  bool in_ranges(const Element& e, uint32_t lo, uint32_t hi) const {
    for (uint32_t i = e.ranges_begin; i < e.ranges_end; ++i)
      if (ranges[i].lo <= hi && lo <= ranges[i].hi) return true;
    return false;
  }
};

}  // namespace lumen::grammar
