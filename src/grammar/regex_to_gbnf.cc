// Regex -> GBNF: a recursive-descent parser builds a small syntax tree (sets of code points,
// sequences, alternations, repetitions: regex_syntax_tree.h), which regex_gbnf_writer.cc then
// writes as one GBNF expression.
#include "grammar/regex_to_gbnf.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "grammar/gbnf_writer.h"
#include "grammar/grammar.h"
#include "grammar/regex_gbnf_expression.h"
#include "grammar/regex_gbnf_writer.h"
#include "grammar/regex_syntax_tree.h"
#include "grammar/repeat_counts.h"

namespace lumen::grammar {
namespace {

using regex::Node;
using regex::set_node;
using regex::write_regex_gbnf;

constexpr size_t kUnbounded = kUnboundedCount;  // grammar/repeat_counts.h
constexpr int kMaxNesting = 200;  // groups inside groups; deeper patterns are refused, not recursed

const CodePointRanges kDigits = {{'0', '9'}};
const CodePointRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodePointRanges kSpace = {{'\t', '\r'}, {' ', ' '}};
// `.`: any character but a line break (\n and \r: ECMAScript and Python agree on these).
const CodePointRanges kDot = complement_ranges({{'\n', '\n'}, {'\r', '\r'}});

// The repetition of one code-point set that `node` is, through groups of one item: the
// inner `.{0,40}` of `(.{0,40}){0,50}`; null for anything else.
Node* repeated_set(Node& node) {
  Node* n = &node;
  while ((n->kind == Node::Kind::kSequence || n->kind == Node::Kind::kAlternation) && n->children.size() == 1)
    n = &n->children[0];
  if (n->kind != Node::Kind::kRepeat || n->children[0].kind != Node::Kind::kSet) return nullptr;
  return n;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, const RegexOptions& options) : pattern_(pattern), options_(options) {}

  Node parse(bool& anchored_start, bool& anchored_end) {
    size_t end = pattern_.size();
    anchored_start = !pattern_.empty() && pattern_[0] == '^';
    if (anchored_start) pos_ = 1;
    anchored_end = ends_with_anchor();
    if (anchored_end) --end;
    end_ = end;
    Node node = parse_alternation(0);
    if (pos_ < end_) fail("unbalanced ')'");
    return node;
  }

 private:
  // A `$` closing the pattern, unless it is escaped (an odd run of backslashes before it).
  bool ends_with_anchor() const {
    if (pattern_.size() <= pos_ || pattern_.back() != '$') return false;
    size_t backslashes = 0;
    for (size_t i = pattern_.size() - 1; i > 0 && pattern_[i - 1] == '\\'; --i) ++backslashes;
    return backslashes % 2 == 0;
  }

  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw GrammarError("regex: " + what + " at offset " + std::to_string(at), at);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

  bool at_end() const { return pos_ >= end_; }
  char peek() const { return pattern_[pos_]; }

  Node parse_alternation(int depth) {
    if (depth > kMaxNesting) fail("groups nested too deeply");
    Node alternation{Node::Kind::kAlternation, {}, {}, 0, 0};
    alternation.children.push_back(parse_sequence(depth));
    while (!at_end() && peek() == '|') {
      ++pos_;
      alternation.children.push_back(parse_sequence(depth));
    }
    if (alternation.children.size() == 1) return std::move(alternation.children[0]);
    return alternation;
  }

  Node parse_sequence(int depth) {
    Node sequence{Node::Kind::kSequence, {}, {}, 0, 0};
    while (!at_end() && peek() != '|' && peek() != ')') {
      Node atom = parse_atom(depth);
      if (!at_end() && parse_quantifier(atom) && !at_end()) {
        size_t min, max, length;
        if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && read_braces(min, max, length))) {
          fail("multiple repeat");
        }
      }
      sequence.children.push_back(std::move(atom));
    }
    return sequence;
  }

  // Reads `{m}`, `{m,}`, `{m,n}`, `{,n}` at pos_ without consuming; false if it is not one
  // (then `{` is a literal, as in Python and non-unicode ECMAScript).
  bool read_braces(size_t& min, size_t& max, size_t& length) const {
    size_t i = pos_ + 1;
    const auto number = [&](size_t& value) {
      const size_t start = i;
      value = 0;
      while (i < end_ && pattern_[i] >= '0' && pattern_[i] <= '9') {
        value = value > 1'000'000'000 ? value : value * 10 + static_cast<size_t>(pattern_[i] - '0');
        ++i;
      }
      return i > start;
    };
    const bool has_min = number(min);
    if (!has_min) min = 0;
    if (i < end_ && pattern_[i] == '}') {
      if (!has_min) return false;
      max = min;
    } else if (i < end_ && pattern_[i] == ',') {
      ++i;
      if (!number(max)) max = kUnbounded;
      if (!has_min && max == kUnbounded) return false;
      if (i >= end_ || pattern_[i] != '}') return false;
    } else {
      return false;
    }
    length = i + 1 - pos_;
    return true;
  }

  bool parse_quantifier(Node& atom) {
    const size_t start = pos_;
    size_t min, max, length = 1;
    switch (peek()) {
      case '*': min = 0, max = kUnbounded; break;
      case '+': min = 1, max = kUnbounded; break;
      case '?': min = 0, max = 1; break;
      case '{':
        if (!read_braces(min, max, length)) return false;
        break;
      default: return false;
    }
    pos_ += length;
    if (max < min) fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "} has max < min", start);
    if (min > options_.max_repetition) {
      fail("repetition count " + std::to_string(min) + " exceeds the limit " + std::to_string(options_.max_repetition), start);
    }
    if (max != kUnbounded && max > options_.max_repetition) max = options_.max_repetition;
    // A lazy `?` matches the same strings as greedy (only which match is reported differs).
    if (!at_end() && peek() == '?') ++pos_;
    if (!at_end() && peek() == '+') fail("possessive quantifiers are not supported");
    if (Node* inner = repeated_set(atom)) {
      // (X{a,b}){c,d} over one set X: one repetition, when the counts it reaches have no gap.
      size_t merged_min, merged_max;
      if (merge_repeat_counts(inner->min, inner->max, min, max, merged_min, merged_max)) {
        if (merged_min > options_.max_repetition) {
          fail("repetition count " + std::to_string(merged_min) + " exceeds the limit " +
                   std::to_string(options_.max_repetition),
               start);
        }
        if (merged_max != kUnbounded && merged_max > options_.max_repetition) merged_max = options_.max_repetition;
        Node set = std::move(inner->children[0]);
        atom = Node{Node::Kind::kRepeat, {}, {std::move(set)}, merged_min, merged_max};
        return true;
      }
    }
    atom = Node{Node::Kind::kRepeat, {}, {std::move(atom)}, min, max};
    return true;
  }

  Node parse_atom(int depth) {
    const size_t start = pos_;
    const char c = peek();
    switch (c) {
      case '(': return parse_group(depth);
      case '[': return parse_class();
      case '.': ++pos_; return set_node(kDot);
      case '\\': return parse_escape(false);
      case '*': case '+': case '?': fail("nothing to repeat");
      case '^': fail("'^' is supported only at the start of the pattern");
      case '$': fail("'$' is supported only at the end of the pattern");
      case '{': {
        size_t min, max, length;
        if (read_braces(min, max, length)) fail("nothing to repeat");
        ++pos_;
        return set_node({{'{', '{'}});
      }
      default: break;
    }
    uint32_t cp;
    if (!decode_utf8(pattern_, pos_, cp) || pos_ > end_) fail("invalid UTF-8", start);
    return set_node({{cp, cp}});
  }

  Node parse_group(int depth) {
    const size_t open = pos_++;
    if (!at_end() && peek() == '?') {
      ++pos_;
      if (!at_end() && peek() == ':') {
        ++pos_;
      } else if (!at_end() && (peek() == '<' || peek() == 'P')) {
        // A named group (?<name>...) or (?P<name>...): the name does not change what matches.
        if (peek() == 'P') ++pos_;
        if (at_end() || peek() != '<') fail("unsupported group syntax", open);
        const size_t close = pattern_.find('>', pos_);
        if (close == std::string_view::npos || close >= end_ || pattern_[pos_ + 1] == '=' || pattern_[pos_ + 1] == '!') {
          fail("lookbehind and malformed group names are not supported", open);
        }
        pos_ = close + 1;
      } else {
        fail("lookaround, flags and other (?...) groups are not supported", open);
      }
    }
    Node inner = parse_alternation(depth + 1);
    if (at_end() || peek() != ')') fail("missing ')'", open);
    ++pos_;
    return inner;
  }

  // After a backslash. In a class, \b is a backspace and the set escapes join the class.
  Node parse_escape(bool in_class) {
    const size_t start = pos_++;
    if (at_end()) fail("a trailing backslash", start);
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'd': return set_node(kDigits);
      case 'D': return set_node(complement_ranges(kDigits));
      case 'w': return set_node(kWord);
      case 'W': return set_node(complement_ranges(kWord));
      case 's': return set_node(kSpace);
      case 'S': return set_node(complement_ranges(kSpace));
      case 'n': return set_node({{'\n', '\n'}});
      case 'r': return set_node({{'\r', '\r'}});
      case 't': return set_node({{'\t', '\t'}});
      case 'f': return set_node({{'\f', '\f'}});
      case 'v': return set_node({{'\v', '\v'}});
      case '0': return set_node({{0, 0}});
      case 'x': return hex_node(2, start);
      case 'u': return hex_node(4, start);
      case 'b':
        if (in_class) return set_node({{'\b', '\b'}});
        fail("word boundaries (\\b) are not supported", start);
      default: break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '1' && c <= '9')) {
      fail(std::string("unsupported escape \\") + c, start);
    }
    pos_ = start + 1;
    uint32_t cp;
    if (!decode_utf8(pattern_, pos_, cp)) fail("invalid UTF-8", start + 1);
    return set_node({{cp, cp}});  // an escaped punctuation (or any other) character is itself
  }

  Node hex_node(size_t digits, size_t escape_start) {
    // pos_ is just after the 'x' or 'u'.
    if (pos_ + digits > end_) fail("incomplete hex escape", escape_start);
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char h = pattern_[pos_ + i];
      uint32_t v;
      if (h >= '0' && h <= '9') v = static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v = static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v = static_cast<uint32_t>(h - 'A' + 10);
      else fail("invalid hex escape", escape_start);
      value = value * 16 + v;
    }
    pos_ += digits;
    if (value >= 0xD800 && value <= 0xDFFF) fail("surrogate code points cannot be matched", escape_start);
    return set_node({{value, value}});
  }

  // One class member: a character (possibly escaped) or a set escape. `single` is set when
  // it is one character (it may start a range).
  CodePointRanges class_member(bool& single) {
    const size_t start = pos_;
    if (peek() == '\\') {
      Node node = parse_escape(true);
      single = node.set.size() == 1 && node.set[0].first == node.set[0].second &&
               !(pattern_[start + 1] == 'd' || pattern_[start + 1] == 'w' || pattern_[start + 1] == 's' ||
                 pattern_[start + 1] == 'D' || pattern_[start + 1] == 'W' || pattern_[start + 1] == 'S');
      return node.set;
    }
    uint32_t cp;
    if (!decode_utf8(pattern_, pos_, cp) || pos_ > end_) fail("invalid UTF-8", start);
    single = true;
    return {{cp, cp}};
  }

  Node parse_class() {
    const size_t open = pos_++;
    const bool negated = !at_end() && peek() == '^';
    if (negated) ++pos_;
    CodePointRanges ranges;
    bool first = true;
    while (true) {
      if (at_end()) fail("missing ']'", open);
      if (peek() == ']' && !first) break;
      if (peek() == '[' && pos_ + 1 < end_ && pattern_[pos_ + 1] == ':') fail("POSIX classes are not supported");
      first = false;
      bool single;
      CodePointRanges member = class_member(single);
      if (single && pos_ + 1 < end_ && peek() == '-' && pattern_[pos_ + 1] != ']') {
        const size_t dash = pos_++;
        bool single_hi;
        CodePointRanges hi = class_member(single_hi);
        if (!single_hi) fail("a range must end with a single character", dash);
        if (hi[0].first < member[0].first) fail("range out of order", dash);
        ranges.emplace_back(member[0].first, hi[0].first);
      } else {
        ranges.insert(ranges.end(), member.begin(), member.end());
      }
    }
    ++pos_;  // ']'
    if (negated) return set_node(complement_ranges(ranges));
    if (normalize_ranges(ranges).empty()) fail("an empty class matches nothing", open);
    return set_node(std::move(ranges));
  }

  std::string_view pattern_;
  const RegexOptions& options_;
  size_t pos_ = 0;
  size_t end_ = 0;
};

}  // namespace

std::string regex_gbnf_expression(std::string_view pattern, const RegexOptions& options) {
  RegexParser parser(pattern, options);
  bool anchored_start, anchored_end;
  const Node node = parser.parse(anchored_start, anchored_end);
  std::string expression = write_regex_gbnf(node, options.target);
  if (options.search) {
    // Pattern semantics: the match may sit anywhere unless anchored. Anything around it is
    // any string (of the target's characters).
    std::string any(1, '(');
    any += write_regex_gbnf(set_node(complement_ranges({})), options.target);
    any += ")*";
    if (!anchored_start) expression = any + " " + expression;
    if (!anchored_end) expression += " " + any;
  }
  return expression;
}

std::string regex_to_gbnf(std::string_view pattern) {
  return "root ::= " + regex_gbnf_expression(pattern, RegexOptions{}) + "\n";
}

}  // namespace lumen::grammar
