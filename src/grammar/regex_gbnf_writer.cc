#include "grammar/regex_gbnf_writer.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "grammar/gbnf_writer.h"
#include "grammar/grammar.h"
#include "grammar/repeat_counts.h"

namespace lumen::grammar::regex {
namespace {

constexpr size_t kUnbounded = kUnboundedCount;  // grammar/repeat_counts.h

bool is_single(const Node& node) {
  return node.kind == Node::Kind::kSet && node.set.size() == 1 && node.set[0].first == node.set[0].second;
}

std::string utf8_of(uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

// The JSON encoding of a character that must be escaped in a JSON string (as nlohmann and
// Python's json write it).
std::string json_escape_of(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  static const char* hex = "0123456789abcdef";
  return std::string("\\u00") + hex[cp >> 4] + hex[cp & 15];
}

bool needs_json_escape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

class Writer {
 public:
  explicit Writer(RegexTarget target) : target_(target) {}

  std::string write(const Node& node) {
    switch (node.kind) {
      case Node::Kind::kSet: return write_set(node.set);
      case Node::Kind::kSequence: return write_sequence(node);
      case Node::Kind::kAlternation: {
        std::string out = "(";
        for (size_t i = 0; i < node.children.size(); ++i) {
          if (i) out += " | ";
          out += write(node.children[i]);
        }
        return out + ")";
      }
      case Node::Kind::kRepeat: {
        const Node& child = node.children[0];
        if (child.kind == Node::Kind::kSequence && child.children.empty()) return "\"\"";  // ()* is ""
        std::string operand = write(node.children[0]);
        if (!is_atomic(node.children[0], operand)) operand = "(" + operand + ")";
        if (node.min == 0 && node.max == kUnbounded) return operand + "*";
        if (node.min == 1 && node.max == kUnbounded) return operand + "+";
        if (node.min == 0 && node.max == 1) return operand + "?";
        operand += '{';
        operand += std::to_string(node.min);
        if (node.max != node.min) {
          operand += ',';
          if (node.max != kUnbounded) operand += std::to_string(node.max);
        }
        operand += '}';
        return operand;
      }
    }
    return "\"\"";
  }

 private:
  // Whether `text` (written from `node`) can take a postfix operator as it is.
  bool is_atomic(const Node& node, const std::string& text) const {
    if (node.kind == Node::Kind::kAlternation) return true;  // written in parentheses
    if (node.kind != Node::Kind::kSet) return false;
    return text.front() == '[' || (text.front() == '"' && text.find(" | ") == std::string::npos);
  }

  std::string literal_of(uint32_t cp) const {
    if (target_ == RegexTarget::kJsonStringContent && needs_json_escape(cp)) return gbnf_literal(json_escape_of(cp));
    return gbnf_literal(utf8_of(cp));
  }

  std::string write_set(const CodePointRanges& set) const {
    if (set.size() == 1 && set[0].first == set[0].second) return literal_of(set[0].first);
    if (target_ == RegexTarget::kRaw) return gbnf_char_class(set);
    // In a JSON string: the characters that stand for themselves in one class, each one that
    // must be escaped as its escape sequence.
    CodePointRanges plain = normalize_ranges(set);
    CodePointRanges escaped;
    CodePointRanges kept;
    for (const auto& [lo, hi] : plain) {
      for (uint32_t cp = lo; cp <= hi && cp < 0x80; ++cp) {
        if (needs_json_escape(cp)) escaped.emplace_back(cp, cp);
      }
    }
    CodePointRanges specials = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    CodePointRanges allowed = complement_ranges(specials);
    // kept = plain ∩ allowed
    for (const auto& [lo, hi] : plain) {
      for (const auto& [alo, ahi] : allowed) {
        const uint32_t a = std::max(lo, alo), b = std::min(hi, ahi);
        if (a <= b) kept.emplace_back(a, b);
      }
    }
    std::vector<std::string> alternatives;
    if (!kept.empty()) {
      kept = normalize_ranges(kept);
      alternatives.push_back(kept.size() == 1 && kept[0].first == kept[0].second ? gbnf_literal(utf8_of(kept[0].first))
                                                                                 : gbnf_char_class(kept));
    }
    for (const auto& [cp, unused] : escaped) alternatives.push_back(gbnf_literal(json_escape_of(cp)));
    if (alternatives.size() == 1) return alternatives[0];
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) {
      if (i) out += " | ";
      out += alternatives[i];
    }
    return out + ")";
  }

  // Runs of single characters become one literal; everything else is separated by spaces.
  std::string write_sequence(const Node& node) const {
    if (node.children.empty()) return "\"\"";
    std::string out;
    std::string run;  // the pending literal's text (as it appears in the output)
    const auto flush = [&] {
      if (run.empty()) return;
      if (!out.empty()) out += ' ';
      out += gbnf_literal(run);
      run.clear();
    };
    for (const Node& child : node.children) {
      if (is_single(child)) {
        const uint32_t cp = child.set[0].first;
        run += target_ == RegexTarget::kJsonStringContent && needs_json_escape(cp) ? json_escape_of(cp) : utf8_of(cp);
        continue;
      }
      flush();
      if (!out.empty()) out += ' ';
      out += Writer(target_).write(child);
    }
    flush();
    return node.children.size() == 1 || out.find(' ') == std::string::npos ? out : "(" + out + ")";
  }

  RegexTarget target_;
};

}  // namespace

std::string write_regex_gbnf(const Node& node, RegexTarget target) { return Writer(target).write(node); }

}  // namespace lumen::grammar::regex
