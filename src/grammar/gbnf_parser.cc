// GBNF text -> Grammar (grammar_rules.h). The notation is llama.cpp's: `name ::= alternatives`
// one rule per line (newlines continue a rule only inside parentheses or right after `::=` or
// `|`), literals "...", classes [...] / [^...], `.`, groups, `*` `+` `?` `{m}` `{m,}` `{m,n}`,
// `#` comments. Repetitions are expanded into rules here, so the matcher only sees sequences,
// alternatives and rule references.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_checks.h"
#include "grammar/grammar_rules.h"

namespace lumen::grammar {
namespace {

// Limits that keep a hostile grammar's cost bounded (the text comes from HTTP clients).
constexpr size_t kMaxTextBytes = 1 << 20;
constexpr size_t kMaxElements = 1 << 20;   // after expanding repetitions
constexpr size_t kMaxRules = 1 << 17;
constexpr uint64_t kMaxRepetitionWeight = 2000;  // repetition counts multiplied along nesting
constexpr int kMaxNesting = 200;

struct ParsedElement {
  ElementKind kind = ElementKind::kChars;
  bool negated = false;
  uint32_t rule = 0;
  std::vector<CodepointRange> ranges;
};
using Sequence = std::vector<ParsedElement>;

struct ParsedRule {
  std::string name;
  std::vector<Sequence> alternatives;
  bool defined = false;
  size_t offset = 0;  // definition, or first reference while undefined
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::vector<ParsedRule> parse() {
    if (text_.size() > kMaxTextBytes)
      fail(0, "the grammar is longer than " + std::to_string(kMaxTextBytes) + " bytes");
    pos_ = skip_space(0, true);
    while (pos_ < text_.size()) parse_rule();
    for (const ParsedRule& rule : rules_)
      if (!rule.defined) fail(rule.offset, "undefined rule '" + rule.name + "'");
    return std::move(rules_);
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& what) const { throw_grammar_error(text_, offset, what); }

  char at(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }

  size_t skip_space(size_t i, bool newline_ok) const {
    while (i < text_.size()) {
      char c = text_[i];
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++i;
      } else if (c == '#') {
        while (i < text_.size() && text_[i] != '\r' && text_[i] != '\n') ++i;
      } else {
        break;
      }
    }
    return i;
  }

  size_t parse_name_end(size_t i) const {
    size_t end = i;
    while (end < text_.size() && is_word_char(text_[end])) ++end;
    if (end == i) fail(i, "expecting a rule name");
    return end;
  }

  uint32_t rule_id(std::string_view name, size_t offset) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    if (rules_.size() >= kMaxRules) fail(offset, "too many rules");
    uint32_t id = static_cast<uint32_t>(rules_.size());
    ids_.emplace(std::string(name), id);
    rules_.push_back({std::string(name), {}, false, offset});
    return id;
  }

  uint32_t new_rule(const std::string& base, size_t offset) {
    std::string name;
    do {
      name = base + "-" + std::to_string(++generated_);
    } while (ids_.count(name));
    return rule_id(name, offset);
  }

  void parse_rule() {
    size_t name_begin = pos_;
    size_t name_end = parse_name_end(pos_);
    std::string name(text_.substr(name_begin, name_end - name_begin));
    size_t i = skip_space(name_end, false);
    if (text_.substr(i, 3) != "::=") fail(i, "expecting '::='");
    pos_ = skip_space(i + 3, true);
    uint32_t id = rule_id(name, name_begin);
    if (rules_[id].defined) fail(name_begin, "rule '" + name + "' is defined twice");
    rules_[id].defined = true;
    rules_[id].offset = name_begin;
    current_rule_ = name;
    uint64_t weight = 1;
    std::vector<Sequence> alternatives = parse_alternatives(false, 0, weight);
    rules_[id].alternatives = std::move(alternatives);
    if (at(pos_) == '\r') {
      pos_ += at(pos_ + 1) == '\n' ? 2 : 1;
    } else if (at(pos_) == '\n') {
      ++pos_;
    } else if (pos_ < text_.size()) {
      fail(pos_, "expecting a newline or the end of the grammar");
    }
    pos_ = skip_space(pos_, true);
  }

  std::vector<Sequence> parse_alternatives(bool nested, int depth, uint64_t& weight) {
    if (depth > kMaxNesting) fail(pos_, "groups nested too deeply");
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(nested, depth, weight));
    while (at(pos_) == '|') {
      pos_ = skip_space(pos_ + 1, true);
      alternatives.push_back(parse_sequence(nested, depth, weight));
    }
    return alternatives;
  }

  void count_elements(size_t n) {
    total_elements_ += n;
    if (total_elements_ > kMaxElements) fail(pos_, "the grammar expands to too many elements");
  }

  uint32_t parse_char(size_t& i) {
    if (i >= text_.size()) fail(i, "unexpected end of the grammar");
    unsigned char c = static_cast<unsigned char>(text_[i]);
    if (c == '\\') {
      char e = at(i + 1);
      int hex = 0;
      switch (e) {
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        case 't': i += 2; return '\t';
        case 'r': i += 2; return '\r';
        case 'n': i += 2; return '\n';
        case '\\': case '"': case '[': case ']': case '-':
          i += 2;
          return static_cast<uint32_t>(e);
        default:
          fail(i, "unknown escape");
      }
      uint64_t value = 0;
      for (int k = 0; k < hex; ++k) {
        char h = at(i + 2 + static_cast<size_t>(k));
        int digit = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (digit < 0) fail(i, "expecting " + std::to_string(hex) + " hex digits");
        value = value * 16 + static_cast<uint64_t>(digit);
      }
      if (value > 0x10FFFF) fail(i, "code point beyond U+10FFFF");
      i += 2 + static_cast<size_t>(hex);
      return static_cast<uint32_t>(value);
    }
    // A UTF-8 sequence in the text is one character; a malformed one is an error.
    int length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (length == 0 || i + static_cast<size_t>(length) > text_.size()) fail(i, "invalid UTF-8");
    uint32_t value = length == 1 ? c : c & (0x7Fu >> length);
    for (int k = 1; k < length; ++k) {
      unsigned char d = static_cast<unsigned char>(text_[i + static_cast<size_t>(k)]);
      if ((d & 0xC0) != 0x80) fail(i, "invalid UTF-8");
      value = (value << 6) | (d & 0x3Fu);
    }
    i += static_cast<size_t>(length);
    return value;
  }

  Sequence parse_sequence(bool nested, int depth, uint64_t& weight) {
    Sequence seq;
    size_t last_start = 0;        // where the last symbol (what a repetition applies to) begins
    uint64_t last_weight = 1;     // repetition weight inside the last symbol
    bool have_last = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      size_t start = pos_;
      if (c == '"') {
        size_t i = pos_ + 1;
        last_start = seq.size();
        while (at(i) != '"') {
          if (i >= text_.size()) fail(start, "unterminated literal");
          uint32_t cp = parse_char(i);
          ParsedElement e;
          e.ranges.push_back({cp, cp});
          seq.push_back(std::move(e));
          count_elements(1);
        }
        pos_ = skip_space(i + 1, nested);
        have_last = true;
        last_weight = 1;
      } else if (c == '[') {
        size_t i = pos_ + 1;
        ParsedElement e;
        if (at(i) == '^') {
          e.negated = true;
          ++i;
        }
        while (at(i) != ']') {
          if (i >= text_.size()) fail(start, "unterminated character class");
          uint32_t lo = parse_char(i);
          uint32_t hi = lo;
          if (at(i) == '-' && at(i + 1) != ']' && i + 1 < text_.size()) {
            ++i;
            hi = parse_char(i);
          }
          if (hi < lo) fail(start, "character range out of order");
          e.ranges.push_back({lo, hi});
        }
        last_start = seq.size();
        seq.push_back(std::move(e));
        count_elements(1);
        pos_ = skip_space(i + 1, nested);
        have_last = true;
        last_weight = 1;
      } else if (c == '.') {
        ParsedElement e;
        e.ranges.push_back({0, 0x10FFFF});
        last_start = seq.size();
        seq.push_back(std::move(e));
        count_elements(1);
        pos_ = skip_space(pos_ + 1, nested);
        have_last = true;
        last_weight = 1;
      } else if (is_word_char(c)) {
        size_t end = parse_name_end(pos_);
        ParsedElement e;
        e.kind = ElementKind::kRuleRef;
        e.rule = rule_id(text_.substr(pos_, end - pos_), pos_);
        last_start = seq.size();
        seq.push_back(std::move(e));
        count_elements(1);
        pos_ = skip_space(end, nested);
        have_last = true;
        last_weight = 1;
      } else if (c == '(') {
        pos_ = skip_space(pos_ + 1, true);
        uint64_t inner = 1;
        std::vector<Sequence> alternatives = parse_alternatives(true, depth + 1, inner);
        if (at(pos_) != ')') fail(pos_, "expecting ')'");
        uint32_t id = new_rule(current_rule_, start);
        rules_[id].alternatives = std::move(alternatives);
        rules_[id].defined = true;
        ParsedElement e;
        e.kind = ElementKind::kRuleRef;
        e.rule = id;
        last_start = seq.size();
        seq.push_back(std::move(e));
        count_elements(1);
        pos_ = skip_space(pos_ + 1, nested);
        have_last = true;
        last_weight = inner;
      } else if (c == '<' || c == '!') {
        fail(pos_, "token references (<[id]>, <token>, !<...>) are not supported");
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) fail(pos_, "expecting an item before '*', '+', '?' or '{'");
        uint64_t min = 0;
        uint64_t max = kUnbounded;
        if (c == '*') {
          pos_ = skip_space(pos_ + 1, nested);
        } else if (c == '+') {
          min = 1;
          pos_ = skip_space(pos_ + 1, nested);
        } else if (c == '?') {
          max = 1;
          pos_ = skip_space(pos_ + 1, nested);
        } else {
          size_t i = skip_space(pos_ + 1, nested);
          min = parse_count(i);
          i = skip_space(i, nested);
          if (at(i) == '}') {
            max = min;
          } else if (at(i) == ',') {
            i = skip_space(i + 1, nested);
            if (is_digit(at(i))) {
              max = parse_count(i);
              i = skip_space(i, nested);
            }
            if (at(i) != '}') fail(i, "expecting '}'");
            if (max < min) fail(start, "repetition maximum below its minimum");
          } else {
            fail(i, "expecting ',' or '}'");
          }
          pos_ = skip_space(i + 1, nested);
        }
        uint64_t count = std::max<uint64_t>(1, max == kUnbounded ? min : max);
        last_weight *= count;
        if (last_weight > kMaxRepetitionWeight)
          fail(start, "repetitions nested too much (the counts multiplied exceed " +
                          std::to_string(kMaxRepetitionWeight) + ")");
        repeat(seq, last_start, min, max, start);
        // A repeated item cannot be repeated again without parentheses ("a"** is an error).
        have_last = false;
      } else {
        break;
      }
      weight = std::max(weight, last_weight);
    }
    return seq;
  }

  static constexpr uint64_t kUnbounded = ~uint64_t{0};

  uint64_t parse_count(size_t& i) {
    if (!is_digit(at(i))) fail(i, "expecting an integer");
    uint64_t value = 0;
    while (is_digit(at(i))) {
      value = value * 10 + static_cast<uint64_t>(at(i) - '0');
      if (value > kMaxRepetitionWeight) fail(i, "repetition count too large");
      ++i;
    }
    return value;
  }

  // Rewrites seq[last_start..] (one symbol) as that symbol repeated min..max times:
  // S{m,n} = S...S (m times) then S' with S'(k) ::= S S'(k-1) | empty, S'(1) ::= S | empty;
  // S{m,} = S...S then R with R ::= S R | empty.
  void repeat(Sequence& seq, size_t last_start, uint64_t min, uint64_t max, size_t offset) {
    Sequence symbol(seq.begin() + static_cast<std::ptrdiff_t>(last_start), seq.end());
    seq.resize(last_start);
    count_elements(symbol.size() * (min > 0 ? min - 1 : 0));
    for (uint64_t k = 0; k < min; ++k) seq.insert(seq.end(), symbol.begin(), symbol.end());
    auto ref_to = [](uint32_t id) {
      ParsedElement e;
      e.kind = ElementKind::kRuleRef;
      e.rule = id;
      return e;
    };
    if (max == kUnbounded) {
      uint32_t id = new_rule(current_rule_, offset);
      Sequence recursive = symbol;
      recursive.push_back(ref_to(id));
      rules_[id].alternatives = {std::move(recursive), Sequence{}};
      rules_[id].defined = true;
      count_elements(symbol.size() + 1);
      seq.push_back(ref_to(id));
    } else if (max > min) {
      uint32_t previous = 0;
      for (uint64_t k = 0; k < max - min; ++k) {
        uint32_t id = new_rule(current_rule_, offset);
        Sequence body = symbol;
        if (k > 0) body.push_back(ref_to(previous));
        rules_[id].alternatives = {std::move(body), Sequence{}};
        rules_[id].defined = true;
        count_elements(symbol.size() + 1);
        previous = id;
      }
      seq.push_back(ref_to(previous));
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<ParsedRule> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::string current_rule_;
  size_t generated_ = 0;
  size_t total_elements_ = 0;
};

// Sorted, merged ranges; the ASCII bitmap with negation applied.
void finish_chars(Grammar& g, Element& e, std::vector<CodepointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](auto& a, auto& b) { return a.lo < b.lo; });
  e.ranges_begin = static_cast<uint32_t>(g.ranges.size());
  for (const CodepointRange& r : ranges) {
    if (g.ranges.size() > e.ranges_begin && r.lo <= g.ranges.back().hi + 1) {
      g.ranges.back().hi = std::max(g.ranges.back().hi, r.hi);
    } else {
      g.ranges.push_back(r);
    }
  }
  e.ranges_end = static_cast<uint32_t>(g.ranges.size());
  for (uint32_t cp = 0; cp < 128; ++cp) {
    bool in = false;
    for (uint32_t i = e.ranges_begin; i < e.ranges_end; ++i) in |= g.ranges[i].lo <= cp && cp <= g.ranges[i].hi;
    if (in != e.negated) e.ascii[cp >> 5] |= 1u << (cp & 31);
  }
}

Grammar flatten(std::vector<ParsedRule>& parsed) {
  Grammar g;
  for (ParsedRule& rule : parsed) {
    Rule out;
    out.name = rule.name;
    out.offset = rule.offset;
    out.alternatives_begin = static_cast<uint32_t>(g.alternative_starts.size());
    for (Sequence& seq : rule.alternatives) {
      g.alternative_starts.push_back(static_cast<uint32_t>(g.elements.size()));
      for (ParsedElement& pe : seq) {
        Element e;
        e.kind = pe.kind;
        e.negated = pe.negated;
        e.rule = pe.rule;
        if (pe.kind == ElementKind::kChars) finish_chars(g, e, std::move(pe.ranges));
        g.elements.push_back(e);
      }
      g.elements.push_back(Element{});  // kEnd
    }
    out.alternatives_end = static_cast<uint32_t>(g.alternative_starts.size());
    g.rules.push_back(std::move(out));
  }
  return g;
}

}  // namespace

[[noreturn]] void throw_grammar_error(std::string_view text, size_t offset, const std::string& what) {
  offset = std::min(offset, text.size());
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  throw GrammarError("grammar error at line " + std::to_string(line) + ", column " +
                         std::to_string(offset - line_start + 1) + " (byte " + std::to_string(offset) + "): " + what,
                     offset);
}

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, std::string_view root) {
  std::vector<ParsedRule> parsed = Parser(text).parse();
  auto grammar = std::make_shared<Grammar>(flatten(parsed));
  auto it = std::find_if(grammar->rules.begin(), grammar->rules.end(), [&](const Rule& r) { return r.name == root; });
  if (it == grammar->rules.end()) throw_grammar_error(text, 0, "no rule named '" + std::string(root) + "' (the start rule)");
  grammar->root = static_cast<uint32_t>(it - grammar->rules.begin());
  check_no_left_recursion(*grammar, text);
  return grammar;
}

}  // namespace lumen::grammar
