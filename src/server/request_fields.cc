#include "server/request_fields.h"

#include <cmath>
#include <cstdint>

#include "server/api_error.h"

namespace lumen::server {

const nlohmann::json* RequestFields::find(const char* name) const {
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> as_integer(const nlohmann::json& value, int64_t min, int64_t max) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    const auto signed_v = static_cast<int64_t>(v);
    if (signed_v < min || signed_v > max) return std::nullopt;
    return signed_v;
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < min || v > max) return std::nullopt;
    return v;
  }
  if (value.is_number_float()) {
    // 2.0 is an integer to JSON's eyes (and to Python's json.dumps of a float); 2.5 is not.
    const double v = value.get<double>();
    if (!std::isfinite(v) || std::floor(v) != v) return std::nullopt;
    if (!(v >= static_cast<double>(min) && v <= static_cast<double>(max))) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  return std::nullopt;
}

std::optional<bool> RequestFields::boolean(const char* name) const {
  const nlohmann::json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) invalid(name, "'{}' must be a boolean", name);
  return v->get<bool>();
}

std::optional<int64_t> RequestFields::integer(const char* name, int64_t min, int64_t max) const {
  const nlohmann::json* v = find(name);
  if (v == nullptr) return std::nullopt;
  auto value = as_integer(*v, min, max);
  if (!value) invalid(name, "'{}' must be an integer in [{}, {}]", name, min, max);
  return value;
}

std::optional<double> RequestFields::number(const char* name, double min, double max) const {
  const nlohmann::json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) invalid(name, "'{}' must be a number in [{}, {}]", name, min, max);
  const double value = v->get<double>();
  if (!std::isfinite(value) || !(value >= min && value <= max)) {
    invalid(name, "'{}' must be a number in [{}, {}]", name, min, max);
  }
  return value;
}

std::optional<std::string> RequestFields::string(const char* name) const {
  const nlohmann::json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) invalid(name, "'{}' must be a string", name);
  return v->get<std::string>();
}

std::optional<std::vector<std::string>> RequestFields::strings(const char* name, size_t max_items) const {
  const nlohmann::json* v = find(name);
  if (v == nullptr) return std::nullopt;
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& item : *v) {
      if (!item.is_string()) invalid(name, "'{}' must be a string or a list of strings", name);
      out.push_back(item.get<std::string>());
    }
  } else {
    invalid(name, "'{}' must be a string or a list of strings", name);
  }
  if (out.size() > max_items) invalid(name, "'{}' holds more than {} strings", name, max_items);
  for (const auto& s : out) {
    if (s.empty()) invalid(name, "'{}' must not hold an empty string", name);
  }
  return out;
}

std::optional<std::vector<int64_t>> RequestFields::integers(const char* name, int64_t min, int64_t max,
                                                            size_t max_items) const {
  const nlohmann::json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_array()) invalid(name, "'{}' must be a list of integers", name);
  if (v->size() > max_items) invalid(name, "'{}' holds more than {} items", name, max_items);
  std::vector<int64_t> out;
  for (const auto& item : *v) {
    auto value = as_integer(item, min, max);
    if (!value) invalid(name, "'{}' must hold integers in [{}, {}]", name, min, max);
    out.push_back(*value);
  }
  return out;
}

}  // namespace lumen::server
