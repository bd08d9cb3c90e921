#include "tokenizer/byte_to_unicode.h"

#include "tokenizer/utf8.h"

namespace lumen::tokenizer {

namespace {

// Bytes whose Latin-1 character is visible: '!'..'~', U+00A1..U+00AC, U+00AE..U+00FF.
bool stands_for_itself(unsigned byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

}  // namespace

const ByteUnicodeMap& ByteUnicodeMap::get() {
  static const ByteUnicodeMap map;
  return map;
}

ByteUnicodeMap::ByteUnicodeMap() {
  byte_of_.fill(-1);
  char32_t next_moved = 0x100;
  for (unsigned byte = 0; byte < 256; ++byte) {
    char32_t cp = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next_moved++;
    code_point_[byte] = cp;
    utf8_[byte] = to_utf8(cp);
    byte_of_[cp] = static_cast<int16_t>(byte);
  }
}

void ByteUnicodeMap::encode(std::string_view bytes, std::string& out) const {
  for (char c : bytes) out += utf8_[static_cast<uint8_t>(c)];
}

std::optional<uint8_t> ByteUnicodeMap::decode(char32_t cp) const {
  if (cp >= byte_of_.size() || byte_of_[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(byte_of_[cp]);
}

}  // namespace lumen::tokenizer
