#pragma once
// Bounds-checked little-endian reads over an untrusted byte span. Every read says what it was
// reading, so a truncated file fails with "truncated file: need 8 bytes for tensor count at
// offset 16, 2 left" instead of reading past the end.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "util/error.h"

namespace lumen::gguf {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t size() const { return bytes_.size(); }

  template <typename T>
  T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    require(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  std::span<const uint8_t> read_bytes(uint64_t count, std::string_view what) {
    require(count, what);
    auto out = bytes_.subspan(pos_, static_cast<size_t>(count));
    pos_ += static_cast<size_t>(count);
    return out;
  }

  // A GGUF string: u64 length, then that many bytes (not NUL-terminated).
  std::string read_string(std::string_view what) {
    uint64_t length = read<uint64_t>(what);
    if (length > remaining()) {
      fail("{} has length {} but only {} bytes remain in the file (offset {})", what, length,
           remaining(), pos_);
    }
    auto raw = read_bytes(length, what);
    return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
  }

 private:
  void require(uint64_t count, std::string_view what) const {
    if (count > remaining()) {
      fail("truncated file: need {} bytes for {} at offset {}, {} left", count, what, pos_,
           remaining());
    }
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace lumen::gguf
