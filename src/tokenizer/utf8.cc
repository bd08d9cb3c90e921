#include "tokenizer/utf8.h"

namespace lumen::tokenizer {

namespace {

struct LeadInfo {
  size_t length;           // bytes in the sequence this byte starts (0: cannot start one)
  uint8_t second_lo = 0x80;  // the second byte's range is narrower after some leads: that
  uint8_t second_hi = 0xBF;  // is what rules out overlong forms, surrogates and > U+10FFFF
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1};
  if (b < 0xC2) return {0};  // continuation byte, or C0/C1 (always overlong)
  if (b < 0xE0) return {2};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0};
}

// How many bytes from `pos` on agree with a sequence of the lead's shape (lead included).
size_t agreeing_prefix(std::string_view text, size_t pos, const LeadInfo& info) {
  size_t n = 1;
  while (n < info.length && pos + n < text.size()) {
    auto b = static_cast<uint8_t>(text[pos + n]);
    uint8_t lo = n == 1 ? info.second_lo : 0x80;
    uint8_t hi = n == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) break;
    ++n;
  }
  return n;
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementChar;
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

std::string to_utf8(char32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

size_t valid_sequence_length(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  LeadInfo info = lead_info(static_cast<uint8_t>(text[pos]));
  if (info.length == 0) return 0;
  return agreeing_prefix(text, pos, info) == info.length ? info.length : 0;
}

size_t maximal_subpart_length(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  LeadInfo info = lead_info(static_cast<uint8_t>(text[pos]));
  if (info.length == 0) return 1;
  return agreeing_prefix(text, pos, info);
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs are the common case; skip them without the table.
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t n = valid_sequence_length(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string sanitize_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = valid_sequence_length(text, pos);
    if (n > 0) {
      out.append(text.substr(pos, n));
      pos += n;
    } else {
      out.append(kReplacementUtf8);
      pos += maximal_subpart_length(text, pos);
    }
  }
  return out;
}

char32_t next_code_point(std::string_view text, size_t& pos) {
  size_t n = valid_sequence_length(text, pos);
  if (n == 0) {
    pos += maximal_subpart_length(text, pos);
    return kReplacementChar;
  }
  auto byte = [&](size_t i) { return static_cast<char32_t>(static_cast<uint8_t>(text[pos + i])); };
  char32_t cp = 0;
  switch (n) {
    case 1: cp = byte(0); break;
    case 2: cp = ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F); break;
    case 3: cp = ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F); break;
    default:
      cp = ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
           (byte(3) & 0x3F);
      break;
  }
  pos += n;
  return cp;
}

size_t complete_prefix_length(std::string_view text) {
  // A sequence is at most 4 bytes, so only a lead among the last 3 bytes can be unfinished.
  size_t size = text.size();
  for (size_t back = 1; back <= 3 && back <= size; ++back) {
    size_t pos = size - back;
    auto b = static_cast<uint8_t>(text[pos]);
    if (b >= 0x80 && b < 0xC0) continue;  // continuation byte: keep looking for its lead
    LeadInfo info = lead_info(b);
    bool unfinished = info.length > back && agreeing_prefix(text, pos, info) == back;
    return unfinished ? pos : size;
  }
  return size;
}

}  // namespace lumen::tokenizer
