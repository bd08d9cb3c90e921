#pragma once
// Typed, range-checked reads of a request's fields. A field that is absent or null reads as
// nullopt (OpenAI's clients send null for "not given"); a field of the wrong type or out of its
// range is an ApiError(400) naming it. Integers accept only integral numbers; numbers must be
// finite.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lumen::server {

class RequestFields {
 public:
  explicit RequestFields(const nlohmann::json& object) : object_(object) {}

  // The field's value, or nullptr when absent or null.
  const nlohmann::json* find(const char* name) const;
  bool has(const char* name) const { return find(name) != nullptr; }

  std::optional<bool> boolean(const char* name) const;
  std::optional<int64_t> integer(const char* name, int64_t min, int64_t max) const;
  std::optional<double> number(const char* name, double min, double max) const;
  std::optional<std::string> string(const char* name) const;
  // A string or a list of strings (OpenAI's `stop`), at most `max_items`, each non-empty.
  std::optional<std::vector<std::string>> strings(const char* name, size_t max_items) const;
  // A list of integers in [min, max], at most `max_items`.
  std::optional<std::vector<int64_t>> integers(const char* name, int64_t min, int64_t max,
                                               size_t max_items) const;

 private:
  const nlohmann::json& object_;
};

// `value` as an integer in [min, max], or nullopt when it is not an integral number in range.
std::optional<int64_t> as_integer(const nlohmann::json& value, int64_t min, int64_t max);

}  // namespace lumen::server
