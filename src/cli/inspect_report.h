#pragma once
// What `lumen inspect` reports about a GGUF file, as JSON; the text form is rendered from it,
// so the two can never disagree.
#include <nlohmann/json.hpp>

#include "gguf/file.h"

namespace lumen::cli {

// Throws lumen::Error when the file's vocabulary is malformed. Hyperparameters that cannot be
// read (an unknown architecture's keys) are reported as an "hparams_error" instead.
nlohmann::ordered_json inspect_report(const gguf::GgufFile& file);

std::string render_inspect_text(const nlohmann::ordered_json& report);

}  // namespace lumen::cli
