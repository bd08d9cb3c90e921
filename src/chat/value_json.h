#pragma once
// Conversions between JSON (the messages and tools a caller hands in) and template values, and
// the `tojson` filter as Hugging Face defines it: Python's json.dumps with ensure_ascii=False,
// optional indent / separators / sort_keys, and no HTML escaping (jinja2's own tojson escapes
// <, >, & and ', which HF replaces precisely because it breaks prompts).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/value.h"

namespace lumen::chat {

// `client`: every string and object key is client text (see Taint); false for trusted input.
Value from_json(const nlohmann::ordered_json& json, bool client = false);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // the indent unit; nullopt = single line
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
  bool sort_keys = false;
};

// json.dumps(value, ...); lumen::Error for values JSON cannot hold (undefined, functions).
std::string dump_json(const Value& value, const JsonDumpOptions& options);

}  // namespace lumen::chat
