#pragma once
// vLLM's speculative_config JSON ({"method": "ngram", "num_speculative_tokens": 5, ...}) read into
// a SpeculativeConfig: the CLI's --speculative-config flag and the Python package's
// speculative_config option (a dict, passed on as JSON) share it. Anything malformed (not JSON,
// not an object, an unknown key, a wrong type, a value out of range, a method Lumen does not
// have) is a one-line lumen::Error that starts with `label` (the flag or option's name).
#include <string>
#include <string_view>

#include "lumen/engine_config.h"

namespace lumen::spec {

SpeculativeConfig parse_speculative_config(const std::string& json, std::string_view label);

}  // namespace lumen::spec
