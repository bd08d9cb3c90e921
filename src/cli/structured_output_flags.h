#pragma once
// The constrained-output flags of the generating commands (`lumen run`, `lumen chat`), as
// llama.cpp's CLI names them where it has them: --grammar / --grammar-file, --json-schema /
// --json-schema-file; and vLLM's other kinds: --regex, --choice (repeatable), --json-object.
// Setting two kinds is an error (SamplingParams::validate says which). JSON is compact unless
// --json-any-whitespace (vLLM's disable_any_whitespace=False) allows whitespace between tokens.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "lumen/sampling_params.h"

namespace lumen::cli {

void add_structured_output_flags(CLI::App* cmd, SamplingParams& params);

}  // namespace lumen::cli
