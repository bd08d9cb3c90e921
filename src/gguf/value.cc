#include "gguf/value.h"

#include <fmt/format.h>

#include <cstring>

namespace lumen::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "invalid";
}

size_t scalar_size(ValueType type) {
  switch (type) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::STRING: case ValueType::ARRAY: return 0;
  }
  return 0;
}

bool is_unsigned_integer(ValueType type) {
  return type == ValueType::U8 || type == ValueType::U16 || type == ValueType::U32 ||
         type == ValueType::U64;
}

bool is_signed_integer(ValueType type) {
  return type == ValueType::I8 || type == ValueType::I16 || type == ValueType::I32 ||
         type == ValueType::I64;
}

bool is_float(ValueType type) { return type == ValueType::F32 || type == ValueType::F64; }

bool Array::operator==(const Array& other) const {
  return element_type == other.element_type && length == other.length && raw == other.raw &&
         strings == other.strings && arrays == other.arrays;
}

Value Value::of_unsigned(ValueType type, uint64_t v) {
  Value out;
  out.type_ = type;
  out.data_ = v;
  return out;
}

Value Value::of_signed(ValueType type, int64_t v) {
  Value out;
  out.type_ = type;
  out.data_ = v;
  return out;
}

Value Value::of_float(ValueType type, double v) {
  Value out;
  out.type_ = type;
  out.data_ = v;
  return out;
}

Value Value::of_bool(bool v) {
  Value out;
  out.type_ = ValueType::BOOL;
  out.data_ = v;
  return out;
}

Value Value::of_string(std::string v) {
  Value out;
  out.type_ = ValueType::STRING;
  out.data_ = std::move(v);
  return out;
}

Value Value::of_array(Array v) {
  Value out;
  out.type_ = ValueType::ARRAY;
  out.data_ = std::make_shared<const Array>(std::move(v));
  return out;
}

Value Value::string_array(std::vector<std::string> items) {
  Array array;
  array.element_type = ValueType::STRING;
  array.length = items.size();
  array.strings = std::move(items);
  return of_array(std::move(array));
}

namespace {
template <typename T>
Value numeric_array(ValueType element_type, std::span<const T> items) {
  Array array;
  array.element_type = element_type;
  array.length = items.size();
  array.raw.resize(items.size_bytes());
  if (!items.empty()) std::memcpy(array.raw.data(), items.data(), items.size_bytes());
  return Value::of_array(std::move(array));
}
}  // namespace

Value Value::f32_array(std::span<const float> items) { return numeric_array(ValueType::F32, items); }
Value Value::i32_array(std::span<const int32_t> items) {
  return numeric_array(ValueType::I32, items);
}

bool Value::operator==(const Value& other) const {
  if (type_ != other.type_) return false;
  if (type_ == ValueType::ARRAY) return as_array() == other.as_array();
  return data_ == other.data_;
}

std::string Value::to_display_string(size_t max_chars) const {
  std::string text;
  switch (type_) {
    case ValueType::STRING: text = fmt::format("\"{}\"", as_string()); break;
    case ValueType::BOOL: text = as_bool() ? "true" : "false"; break;
    case ValueType::F32: case ValueType::F64: text = fmt::format("{}", as_float()); break;
    case ValueType::ARRAY:
      text = fmt::format("[{} x {}]", as_array().length, value_type_name(as_array().element_type));
      break;
    default:
      text = is_unsigned_integer(type_) ? fmt::format("{}", as_unsigned())
                                        : fmt::format("{}", as_signed());
  }
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

}  // namespace lumen::gguf
