#pragma once
// The regex parser's syntax tree (regex_to_gbnf.cc builds it, regex_gbnf_writer.cc writes it):
// sets of code points, sequences, alternations and bounded or unbounded repetitions.
#include <cstddef>
#include <utility>
#include <vector>

#include "grammar/gbnf_writer.h"

namespace lumen::grammar::regex {

struct Node {
  enum class Kind { kSet, kSequence, kAlternation, kRepeat } kind;
  CodePointRanges set;         // kSet
  std::vector<Node> children;  // kSequence, kAlternation; kRepeat: one
  size_t min = 0, max = 0;     // kRepeat
};

inline Node set_node(CodePointRanges ranges) {
  return Node{Node::Kind::kSet, normalize_ranges(std::move(ranges)), {}, 0, 0};
}

}  // namespace lumen::grammar::regex
