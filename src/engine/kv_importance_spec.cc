// Parsing and printing lumen::KvImportance specs (include/lumen/kv_eviction.h): the one syntax
// of --kv-eviction's importance methods and of a request's kv_eviction field.
#include <charconv>
#include <vector>

#include "lumen/kv_eviction.h"
#include "util/error.h"

namespace lumen {

namespace {

int64_t count_of(std::string_view key, std::string_view value, std::string_view spec) {
  int64_t out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || out < 0 ||
      out > kMaxKvImportanceBudget) {
    fail("kv eviction '{}': {} must be a count in [0, {}], not '{}'", spec, key, kMaxKvImportanceBudget, value);
  }
  return out;
}

}  // namespace

KvImportance parse_kv_importance(std::string_view spec) {
  KvImportance out;
  if (spec == "none") return out;
  const size_t colon = spec.find(':');
  const std::string_view method = spec.substr(0, colon);
  if (method == "snapkv") {
    out.method = KvImportanceMethod::SnapKv;
  } else if (method == "h2o") {
    out.method = KvImportanceMethod::H2O;
  } else {
    fail(
        "kv eviction '{}': the method must be snapkv, h2o or none (sink:N,window:W is StreamingLLM, "
        "a server-wide flag only)",
        spec);
  }
  if (colon == std::string_view::npos) fail("kv eviction '{}': budget=B is required", spec);
  std::string_view rest = spec.substr(colon + 1);
  bool has_budget = false;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty()) fail("kv eviction '{}': a trailing comma", spec);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) fail("kv eviction '{}': '{}' is not key=value", spec, part);
    const std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    const bool snap = out.method == KvImportanceMethod::SnapKv;
    if (key == "budget") {
      out.budget = count_of(key, value, spec);
      has_budget = true;
    } else if (snap && key == "window") {
      out.window = count_of(key, value, spec);
    } else if (snap && key == "kernel") {
      out.kernel = count_of(key, value, spec);
    } else if (!snap && key == "recent") {
      out.recent = count_of(key, value, spec);
    } else {
      fail("kv eviction '{}': unknown key '{}' (snapkv takes budget, window, kernel; h2o takes budget, recent)", spec,
           key);
    }
  }
  if (!has_budget || out.budget == 0) fail("kv eviction '{}': budget=B (B > 0) is required", spec);
  if (out.method == KvImportanceMethod::SnapKv) {
    if (out.window == 0 || out.window >= out.budget) {
      fail("kv eviction '{}': the window ({}) must be in [1, budget {})", spec, out.window, out.budget);
    }
    if (out.kernel == 0 || out.kernel % 2 == 0 || out.kernel > 63) {
      fail("kv eviction '{}': the pooling kernel ({}) must be odd, 1 to 63", spec, out.kernel);
    }
  } else {
    if (out.recent < 0) out.recent = out.budget / 2;
    if (out.recent >= out.budget)
      fail("kv eviction '{}': recent ({}) must be below the budget {}", spec, out.recent, out.budget);
  }
  return out;
}

std::string format_kv_importance(const KvImportance& importance) {
  switch (importance.method) {
    case KvImportanceMethod::SnapKv:
      return fmt::format("snapkv:budget={},window={},kernel={}", importance.budget, importance.window,
                         importance.kernel);
    case KvImportanceMethod::H2O: return fmt::format("h2o:budget={},recent={}", importance.budget, importance.recent);
    case KvImportanceMethod::None: break;
  }
  return "none";
}

}  // namespace lumen
