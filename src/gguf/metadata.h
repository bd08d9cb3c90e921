#pragma once
// The key/value section of a GGUF file, in file order, with typed accessors. Accessors fail
// with a lumen::Error that names the key and says what was wrong ("missing", "has type string,
// expected an unsigned integer"), so a model loader never has to build those messages itself.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf/value.h"

namespace lumen::gguf {

class Metadata {
 public:
  // Adds or replaces a key; a new key goes last, a replaced one keeps its place.
  void set(std::string key, Value value);
  bool erase(std::string_view key);

  const Value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

  // Required values. Integers of any width and signedness are accepted when they fit.
  uint64_t get_unsigned(std::string_view key) const;
  int64_t get_signed(std::string_view key) const;
  double get_float(std::string_view key) const;  // f32, f64 or an integer
  bool get_bool(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  // An array whose elements must have `element_type`.
  const Array& get_array(std::string_view key, ValueType element_type) const;

  // Optional values: nullopt when absent, an error when present with the wrong type.
  std::optional<uint64_t> find_unsigned(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  const Array* find_array(std::string_view key, ValueType element_type) const;

  bool operator==(const Metadata& other) const { return entries_ == other.entries_; }

 private:
  const Value& require(std::string_view key) const;

  std::vector<std::pair<std::string, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace lumen::gguf
