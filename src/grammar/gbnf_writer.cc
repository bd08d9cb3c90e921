#include "grammar/gbnf_writer.h"

#include <algorithm>
#include <cstdio>

#include "grammar/grammar.h"

namespace lumen::grammar {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

std::string hex_escape(uint32_t code_point) {
  char buffer[16];
  if (code_point < 0x100) {
    std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned>(code_point));
  } else if (code_point < 0x10000) {
    std::snprintf(buffer, sizeof buffer, "\\u%04X", static_cast<unsigned>(code_point));
  } else {
    std::snprintf(buffer, sizeof buffer, "\\U%08X", static_cast<unsigned>(code_point));
  }
  return buffer;
}

// One code point inside a character class: printable ASCII as itself (escaped where the class
// syntax needs it), everything else as a hex escape so the grammar text stays plain ASCII.
std::string class_char(uint32_t code_point) {
  if (code_point == '\\' || code_point == ']' || code_point == '[') return std::string{'\\', static_cast<char>(code_point)};
  // '-' and '^' as hex: not every GBNF reader takes \- and \^.
  if (code_point == '-' || code_point == '^') return hex_escape(code_point);
  if (code_point >= 0x20 && code_point < 0x7F) return std::string(1, static_cast<char>(code_point));
  return hex_escape(code_point);
}

}  // namespace

bool decode_utf8(std::string_view text, size_t& pos, uint32_t& code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  size_t length;
  uint32_t minimum;
  if (lead < 0x80) {
    code_point = lead;
    ++pos;
    return true;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, minimum = 0x80, code_point = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, minimum = 0x800, code_point = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, minimum = 0x10000, code_point = lead & 0x07;
  } else {
    return false;
  }
  if (pos + length > text.size()) return false;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return false;
    code_point = (code_point << 6) | (byte(pos + i) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (code_point < minimum || code_point > kMaxCodePoint ||
      (code_point >= kSurrogateFirst && code_point <= kSurrogateLast)) {
    return false;
  }
  pos += length;
  return true;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    uint32_t cp;
    if (!decode_utf8(text, pos, cp)) {
      throw GrammarError("a literal is not valid UTF-8 (at byte " + std::to_string(start) + ")", start);
    }
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp < 0x20 || cp == 0x7F) {
      out += hex_escape(cp);
    } else {
      out.append(text.substr(start, pos - start));  // printable ASCII and non-ASCII as themselves
    }
  }
  out += '"';
  return out;
}

CodePointRanges normalize_ranges(CodePointRanges ranges) {
  CodePointRanges split;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) continue;
    hi = std::min(hi, kMaxCodePoint);
    if (lo < kSurrogateFirst && hi >= kSurrogateFirst) split.emplace_back(lo, kSurrogateFirst - 1);
    if (hi > kSurrogateLast && lo <= kSurrogateLast) split.emplace_back(kSurrogateLast + 1, hi);
    if (hi < kSurrogateFirst || lo > kSurrogateLast) split.emplace_back(lo, hi);
  }
  std::sort(split.begin(), split.end());
  CodePointRanges merged;
  for (const auto& range : split) {
    if (!merged.empty() && range.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

CodePointRanges complement_ranges(const CodePointRanges& ranges) {
  const CodePointRanges normalized = normalize_ranges(ranges);
  CodePointRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalized) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return normalize_ranges(out);
}

std::string gbnf_char_class(const CodePointRanges& ranges) {
  std::string out = "[";
  for (const auto& [lo, hi] : ranges) {
    out += class_char(lo);
    if (hi != lo) {
      if (hi > lo + 1) out += '-';
      out += class_char(hi);
    }
  }
  out += ']';
  return out;
}

std::string GbnfRules::unique_name(std::string_view hint) {
  std::string base = name_prefix_;
  for (char c : hint) {
    const bool valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    base += valid ? c : '-';
  }
  if (base.empty()) base.assign(1, 'r');
  if (base.size() > 64 + name_prefix_.size())
    base.resize(64 + name_prefix_.size());  // names from long property paths stay readable
  std::string name = base;
  for (int suffix = 1; body_of_.count(name); ++suffix) name = base + std::to_string(suffix);
  return name;
}

void GbnfRules::account(size_t bytes) {
  bytes_ += bytes;
  if (bytes_ > max_bytes_) {
    throw GrammarError("the schema's grammar would exceed " + std::to_string(max_bytes_) + " bytes", 0);
  }
}

std::string GbnfRules::add(std::string_view hint, std::string body) {
  if (auto it = name_of_body_.find(body); it != name_of_body_.end()) return it->second;
  std::string name = unique_name(hint);
  account(name.size() + body.size() + 6);
  name_of_body_.emplace(body, name);
  body_of_.emplace(name, std::move(body));
  return name;
}

std::string GbnfRules::reserve(std::string_view hint) {
  std::string name = unique_name(hint);
  body_of_.emplace(name, std::string());
  return name;
}

void GbnfRules::define(const std::string& name, std::string body) {
  account(name.size() + body.size() + 6);
  body_of_[name] = std::move(body);
}

std::string GbnfRules::text(const std::string& root) const {
  std::string out;
  const auto emit = [&](const std::string& name, const std::string& body) {
    if (body.empty()) throw GrammarError("internal: rule " + name + " was reserved but never defined", 0);
    out += name + " ::= " + body + "\n";
  };
  emit(root, body_of_.at(root));
  for (const auto& [name, body] : body_of_) {
    if (name != root) emit(name, body);
  }
  return out;
}

}  // namespace lumen::grammar
