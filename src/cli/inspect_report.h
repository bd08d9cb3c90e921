#pragma once
// What `lumen inspect` reports about a GGUF file, as JSON; the text form is rendered from it,
// so the two can never disagree.
#include <nlohmann/json.hpp>

#include "gguf/file.h"

namespace lumen::cli {

// Throws lumen::Error when the file's vocabulary is malformed. Hyperparameters that cannot be
// read (an unknown architecture's keys) are reported as an "hparams_error" instead.
// `with_metadata`: also every metadata key with its type and a short rendering of its value
// (arrays summarised), in file order. The JSON's tensors are in file order; the text lists them
// in natural order (token_embd, blk.0, blk.1, ..., blk.10, then the output).
nlohmann::ordered_json inspect_report(const gguf::GgufFile& file, bool with_metadata = false);

std::string render_inspect_text(const nlohmann::ordered_json& report);

}  // namespace lumen::cli
