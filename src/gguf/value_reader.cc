#include "gguf/value_reader.h"

#include "gguf/file.h"
#include "util/checked_math.h"

namespace lumen::gguf {

ValueType read_value_type(ByteCursor& cursor, std::string_view what) {
  uint32_t raw = cursor.read<uint32_t>(what);
  if (raw >= kValueTypeCount) fail("{}: invalid value type {}", what, raw);
  return static_cast<ValueType>(raw);
}

namespace {

Value read_scalar(ByteCursor& cursor, ValueType type, std::string_view what) {
  switch (type) {
    case ValueType::U8: return Value::of_unsigned(type, cursor.read<uint8_t>(what));
    case ValueType::U16: return Value::of_unsigned(type, cursor.read<uint16_t>(what));
    case ValueType::U32: return Value::of_unsigned(type, cursor.read<uint32_t>(what));
    case ValueType::U64: return Value::of_unsigned(type, cursor.read<uint64_t>(what));
    case ValueType::I8: return Value::of_signed(type, cursor.read<int8_t>(what));
    case ValueType::I16: return Value::of_signed(type, cursor.read<int16_t>(what));
    case ValueType::I32: return Value::of_signed(type, cursor.read<int32_t>(what));
    case ValueType::I64: return Value::of_signed(type, cursor.read<int64_t>(what));
    case ValueType::F32: return Value::of_float(type, cursor.read<float>(what));
    case ValueType::F64: return Value::of_float(type, cursor.read<double>(what));
    case ValueType::BOOL: {
      uint8_t byte = cursor.read<uint8_t>(what);
      // The spec says a bool is 0 or 1; anything else means the file is not what it claims.
      if (byte > 1) fail("{}: bool value {} is neither 0 nor 1", what, byte);
      return Value::of_bool(byte == 1);
    }
    case ValueType::STRING: return Value::of_string(cursor.read_string(what));
    case ValueType::ARRAY: break;
  }
  fail("{}: internal error: not a scalar type", what);
}

Array read_array(ByteCursor& cursor, std::string_view what, int depth) {
  if (depth >= kMaxArrayNesting) {
    fail("{}: arrays nested deeper than {} levels", what, kMaxArrayNesting);
  }
  Array array;
  array.element_type = read_value_type(cursor, what);
  array.length = cursor.read<uint64_t>(what);

  // Bound the length by the bytes present before allocating anything: every element takes at
  // least `min_element` bytes (a string or nested array at least its 8-byte length).
  size_t element_size = scalar_size(array.element_type);
  uint64_t min_element = element_size != 0 ? element_size : 8;
  auto min_bytes = checked_mul(array.length, min_element);
  if (!min_bytes || *min_bytes > cursor.remaining()) {
    fail("{}: array of {} {} elements does not fit in the {} bytes left", what, array.length,
         value_type_name(array.element_type), cursor.remaining());
  }

  if (array.element_type == ValueType::STRING) {
    array.strings.reserve(static_cast<size_t>(array.length));
    for (uint64_t i = 0; i < array.length; ++i) array.strings.push_back(cursor.read_string(what));
  } else if (array.element_type == ValueType::ARRAY) {
    array.arrays.reserve(static_cast<size_t>(array.length));
    for (uint64_t i = 0; i < array.length; ++i) {
      array.arrays.push_back(Value::of_array(read_array(cursor, what, depth + 1)));
    }
  } else {
    auto raw = cursor.read_bytes(*min_bytes, what);
    if (array.element_type == ValueType::BOOL) {
      for (uint8_t byte : raw) {
        if (byte > 1) fail("{}: bool array element {} is neither 0 nor 1", what, byte);
      }
    }
    array.raw.assign(raw.begin(), raw.end());
  }
  return array;
}

}  // namespace

Value read_value(ByteCursor& cursor, ValueType type, std::string_view what, int depth) {
  if (type == ValueType::ARRAY) return Value::of_array(read_array(cursor, what, depth));
  return read_scalar(cursor, type, what);
}

}  // namespace lumen::gguf
