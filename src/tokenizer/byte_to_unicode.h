#pragma once
// GPT-2's reversible map between bytes and printable code points. Byte-level BPE vocabularies
// spell every token in these code points so that no token contains a space or a control
// character: printable Latin-1 bytes stand for themselves, the other 68 bytes are moved to
// U+0100 onwards, in byte order.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lumen::tokenizer {

class ByteUnicodeMap {
 public:
  // The one immutable table, built on first use.
  static const ByteUnicodeMap& get();

  // UTF-8 of the code point that stands for `byte`.
  const std::string& encode(uint8_t byte) const { return utf8_[byte]; }
  // Appends the mapped form of every byte of `bytes`.
  void encode(std::string_view bytes, std::string& out) const;

  // The byte a code point stands for, if it is one of the 256.
  std::optional<uint8_t> decode(char32_t cp) const;

 private:
  ByteUnicodeMap();
  std::array<std::string, 256> utf8_;
  std::array<char32_t, 256> code_point_{};
  std::array<int16_t, 512> byte_of_{};  // every mapped code point is below U+0200
};

}  // namespace lumen::tokenizer
