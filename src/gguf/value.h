#pragma once
// A GGUF metadata value: one of the 13 types the format defines, arrays included (arrays of
// arrays too, which the spec allows). Integer and float scalars are kept widened, with their
// declared type alongside, so a value read from a file writes back byte-for-byte.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lumen::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

std::string_view value_type_name(ValueType type);
// Bytes a scalar of this type occupies in a file; 0 for STRING and ARRAY (variable size).
size_t scalar_size(ValueType type);
bool is_unsigned_integer(ValueType type);
bool is_signed_integer(ValueType type);
bool is_float(ValueType type);

class Value;

// A homogeneous array. Numbers and bools are kept as their little-endian file bytes (a vocab's
// scores array is 100k+ floats: one allocation, no per-element objects); strings and nested
// arrays as element objects.
struct Array {
  ValueType element_type = ValueType::U8;
  uint64_t length = 0;
  std::vector<uint8_t> raw;            // numeric and bool elements
  std::vector<std::string> strings;    // STRING elements
  std::vector<Value> arrays;           // ARRAY elements (nested)

  bool operator==(const Array& other) const;
};

class Value {
 public:
  Value() = default;
  static Value of_unsigned(ValueType type, uint64_t v);
  static Value of_signed(ValueType type, int64_t v);
  static Value of_float(ValueType type, double v);
  static Value of_bool(bool v);
  static Value of_string(std::string v);
  static Value of_array(Array v);

  // Conveniences for writers.
  static Value u32(uint32_t v) { return of_unsigned(ValueType::U32, v); }
  static Value u64(uint64_t v) { return of_unsigned(ValueType::U64, v); }
  static Value i32(int32_t v) { return of_signed(ValueType::I32, v); }
  static Value f32(float v) { return of_float(ValueType::F32, v); }
  static Value string_array(std::vector<std::string> items);
  static Value f32_array(std::span<const float> items);
  static Value i32_array(std::span<const int32_t> items);

  ValueType type() const { return type_; }
  uint64_t as_unsigned() const { return std::get<uint64_t>(data_); }
  int64_t as_signed() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  bool as_bool() const { return std::get<bool>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<const Array>>(data_); }

  bool operator==(const Value& other) const;

  // Short human-readable rendering; arrays are summarised ("[49152 x string]").
  std::string to_display_string(size_t max_chars = 80) const;

 private:
  ValueType type_ = ValueType::U8;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<const Array>> data_ =
      uint64_t{0};
};

}  // namespace lumen::gguf
