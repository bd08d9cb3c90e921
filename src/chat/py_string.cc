#include "chat/py_string.h"

#include <fmt/format.h>

#include "chat/memory_budget.h"
#include "chat/runtime.h"
#include "chat/value.h"

namespace lumen::chat {

void check_built_size(size_t bytes) {
  if (bytes > kMaxBuiltString) throw RenderRefused("the template built a string past the size limit");
}

bool py_isspace(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f);
  switch (cp) {
    case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029: case 0x202f: case 0x205f:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

char32_t utf8_next(std::string_view text, size_t& pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char b0 = byte(pos);
  size_t len = b0 < 0x80 ? 1 : b0 < 0xe0 ? 2 : b0 < 0xf0 ? 3 : 4;
  if (pos + len > text.size()) {  // never for validated input; keep going safely anyway
    ++pos;
    return 0xfffd;
  }
  char32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1fu) : len == 3 ? (b0 & 0x0fu) : (b0 & 0x07u);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (byte(pos + i) & 0x3fu);
  pos += len;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  auto put = [&](unsigned v) { out.push_back(static_cast<char>(v)); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xc0 | (cp >> 6));
    put(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    put(0xe0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3f));
    put(0x80 | (cp & 0x3f));
  } else {
    put(0xf0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3f));
    put(0x80 | ((cp >> 6) & 0x3f));
    put(0x80 | (cp & 0x3f));
  }
}

bool utf8_valid(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto b0 = static_cast<unsigned char>(text[i]);
    size_t len;
    char32_t min;
    if (b0 < 0x80) { ++i; continue; }
    if (b0 >= 0xc2 && b0 < 0xe0) { len = 2; min = 0x80; }
    else if (b0 >= 0xe0 && b0 < 0xf0) { len = 3; min = 0x800; }
    else if (b0 >= 0xf0 && b0 < 0xf5) { len = 4; min = 0x10000; }
    else return false;
    if (i + len > text.size()) return false;
    char32_t cp = b0 & (0x7fu >> len);
    for (size_t k = 1; k < len; ++k) {
      auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::vector<size_t> code_point_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  size_t pos = 0;
  while (pos < text.size()) {
    offsets.push_back(pos);
    require_room_growing(offsets.size(), sizeof(offsets[0]));
    utf8_next(text, pos);
  }
  offsets.push_back(text.size());
  return offsets;
}

size_t code_point_count(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

namespace {
bool in_chars(char32_t cp, const std::optional<std::string>& chars) {
  if (!chars) return py_isspace(cp);
  size_t pos = 0;
  while (pos < chars->size()) {
    if (utf8_next(*chars, pos) == cp) return true;
  }
  return false;
}
}  // namespace

std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                     bool right) {
  auto offsets = code_point_offsets(text);
  size_t n = offsets.size() - 1, begin = 0, end = n;
  auto cp_at = [&](size_t k) {
    size_t p = offsets[k];
    return utf8_next(text, p);
  };
  if (left) while (begin < end && in_chars(cp_at(begin), chars)) ++begin;
  if (right) while (end > begin && in_chars(cp_at(end - 1), chars)) --end;
  return std::string(text.substr(offsets[begin], offsets[end] - offsets[begin]));
}

namespace {
// Whitespace-run splitting shared by split() and rsplit(): returns [begin, end) byte ranges.
std::vector<std::pair<size_t, size_t>> whitespace_words(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> words;
  constexpr size_t kNone = std::string_view::npos;
  size_t pos = 0, start = kNone;
  while (pos < text.size()) {
    size_t here = pos;
    bool space = py_isspace(utf8_next(text, pos));
    if (space && start != kNone) {
      words.emplace_back(start, here);
      require_room_growing(words.size(), sizeof(words[0]));
      start = kNone;
    } else if (!space && start == kNone) {
      start = here;
    }
  }
  if (start != kNone) words.emplace_back(start, text.size());
  return words;
}
}  // namespace

std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!sep) {
    auto words = whitespace_words(text);
    for (size_t k = 0; k < words.size(); ++k) {
      if (maxsplit >= 0 && static_cast<int64_t>(k) == maxsplit) {
        // The remainder starts at the next word and keeps everything after it, as Python does.
        parts.emplace_back(text.substr(words[k].first));
        require_room_growing(parts.size(), sizeof(std::string) + sizeof(Value));
        return parts;
      }
      parts.emplace_back(text.substr(words[k].first, words[k].second - words[k].first));
      require_room_growing(parts.size(), sizeof(std::string) + sizeof(Value));
    }
    return parts;
  }
  size_t start = 0;
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    size_t hit = text.find(*sep, start);
    if (hit == std::string_view::npos) break;
    parts.emplace_back(text.substr(start, hit - start));
    require_room_growing(parts.size(), sizeof(std::string) + sizeof(Value));
    start = hit + sep->size();
    ++splits;
  }
  parts.emplace_back(text.substr(start));
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep,
                                   int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!sep) {
    auto words = whitespace_words(text);
    size_t n = words.size();
    for (size_t k = 0; k < n; ++k) {
      size_t idx = n - 1 - k;
      if (maxsplit >= 0 && static_cast<int64_t>(k) == maxsplit) {
        parts.emplace_back(text.substr(0, words[idx].second));
        require_room_growing(parts.size(), sizeof(std::string) + sizeof(Value));
        break;
      }
      parts.emplace_back(text.substr(words[idx].first, words[idx].second - words[idx].first));
      require_room_growing(parts.size(), sizeof(std::string) + sizeof(Value));
    }
    return {parts.rbegin(), parts.rend()};
  }
  size_t end = text.size();
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    if (end < sep->size()) break;
    size_t hit = text.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    parts.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
    require_room_growing(parts.size(), sizeof(std::string) + sizeof(Value));
    end = hit;
    ++splits;
  }
  parts.emplace_back(text.substr(0, end));
  return {parts.rbegin(), parts.rend()};
}

std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string py_capitalize(std::string_view text) {
  std::string out = ascii_lower(text);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string py_title(std::string_view text) {
  std::string out(text);
  bool prev_letter = false;
  for (char& c : out) {
    bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    if (lower && !prev_letter) c = static_cast<char>(c - 32);
    else if (upper && prev_letter) c = static_cast<char>(c + 32);
    // Non-ASCII bytes count as letters so a word with accents is not split (approximation).
    prev_letter = upper || lower || (static_cast<unsigned char>(c) >= 0x80);
  }
  return out;
}

std::string py_replace(std::string_view text, std::string_view from, std::string_view to,
                       int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between every code point and at both ends
    size_t pos = 0;
    int64_t done = 0;
    while (true) {
      if (count < 0 || done < count) { out += to; ++done; }
      check_built_size(out.size());
      if (pos >= text.size()) break;
      size_t start = pos;
      utf8_next(text, pos);
      out += text.substr(start, pos - start);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    check_built_size(out.size() + to.size());
    size_t hit = text.find(from, start);
    if (hit == std::string_view::npos) break;
    out += text.substr(start, hit - start);
    out += to;
    start = hit + from.size();
    ++done;
  }
  out += text.substr(start);
  return out;
}

std::string py_repr_string(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    char32_t cp = utf8_next(text, pos);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    } else {
      out += text.substr(start, pos - start);
    }
  }
  out += quote;
  return out;
}

std::vector<std::string> py_splitlines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.emplace_back(text.substr(start, i - start));
      require_room_growing(lines.size(), sizeof(std::string) + sizeof(Value));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

}  // namespace lumen::chat
