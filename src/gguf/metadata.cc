#include "gguf/metadata.h"

#include <limits>

#include "util/error.h"

namespace lumen::gguf {

void Metadata::set(std::string key, Value value) {
  if (auto it = index_.find(key); it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

bool Metadata::erase(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  return true;
}

const Value* Metadata::find(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value& Metadata::require(std::string_view key) const {
  const Value* value = find(key);
  if (value == nullptr) fail("missing required metadata key '{}'", key);
  return *value;
}

namespace {
[[noreturn]] void wrong_type(std::string_view key, const Value& value, std::string_view wanted) {
  fail("metadata key '{}' has type {}, expected {}", key, value_type_name(value.type()), wanted);
}

uint64_t unsigned_of(std::string_view key, const Value& value) {
  if (is_unsigned_integer(value.type())) return value.as_unsigned();
  if (is_signed_integer(value.type())) {
    if (value.as_signed() < 0) fail("metadata key '{}' is {}, expected >= 0", key, value.as_signed());
    return static_cast<uint64_t>(value.as_signed());
  }
  wrong_type(key, value, "an unsigned integer");
}

double float_of(std::string_view key, const Value& value) {
  if (is_float(value.type())) return value.as_float();
  if (is_unsigned_integer(value.type())) return static_cast<double>(value.as_unsigned());
  if (is_signed_integer(value.type())) return static_cast<double>(value.as_signed());
  wrong_type(key, value, "a number");
}

const Array& array_of(std::string_view key, const Value& value, ValueType element_type) {
  if (value.type() != ValueType::ARRAY) wrong_type(key, value, "an array");
  const Array& array = value.as_array();
  if (array.element_type != element_type) {
    fail("metadata key '{}' is an array of {}, expected an array of {}", key,
         value_type_name(array.element_type), value_type_name(element_type));
  }
  return array;
}
}  // namespace

uint64_t Metadata::get_unsigned(std::string_view key) const {
  return unsigned_of(key, require(key));
}

int64_t Metadata::get_signed(std::string_view key) const {
  const Value& value = require(key);
  if (is_signed_integer(value.type())) return value.as_signed();
  if (is_unsigned_integer(value.type())) {
    if (value.as_unsigned() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("metadata key '{}' is {}, too large for a signed integer", key, value.as_unsigned());
    }
    return static_cast<int64_t>(value.as_unsigned());
  }
  wrong_type(key, value, "an integer");
}

double Metadata::get_float(std::string_view key) const { return float_of(key, require(key)); }

bool Metadata::get_bool(std::string_view key) const {
  const Value& value = require(key);
  if (value.type() != ValueType::BOOL) wrong_type(key, value, "bool");
  return value.as_bool();
}

const std::string& Metadata::get_string(std::string_view key) const {
  const Value& value = require(key);
  if (value.type() != ValueType::STRING) wrong_type(key, value, "string");
  return value.as_string();
}

const Array& Metadata::get_array(std::string_view key, ValueType element_type) const {
  return array_of(key, require(key), element_type);
}

std::optional<uint64_t> Metadata::find_unsigned(std::string_view key) const {
  const Value* value = find(key);
  if (value == nullptr) return std::nullopt;
  return unsigned_of(key, *value);
}

std::optional<double> Metadata::find_float(std::string_view key) const {
  const Value* value = find(key);
  if (value == nullptr) return std::nullopt;
  return float_of(key, *value);
}

std::optional<bool> Metadata::find_bool(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_bool(key);
}

std::optional<std::string> Metadata::find_string(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get_string(key);
}

const Array* Metadata::find_array(std::string_view key, ValueType element_type) const {
  const Value* value = find(key);
  if (value == nullptr) return nullptr;
  return &array_of(key, *value, element_type);
}

}  // namespace lumen::gguf
