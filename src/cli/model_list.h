#pragma once
// `lumen list`: the GGUF files in the model cache, described from their metadata alone (the
// weights are mapped, never read), and the catalog models not downloaded yet. A file that does
// not parse is listed with its error.
#include <nlohmann/json.hpp>
#include <string>

#include "cli/model_catalog.h"

namespace lumen::cli {

nlohmann::ordered_json model_list_report(const std::string& cache_dir, const Catalog& catalog);

std::string render_model_list_text(const nlohmann::ordered_json& report);

}  // namespace lumen::cli
