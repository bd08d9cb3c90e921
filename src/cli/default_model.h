#pragma once
// Where Lumen keeps downloaded models, and which one it uses when -m is not given.
#include <string>

namespace lumen::cli {

// $LUMEN_CACHE, else ~/.cache/lumen/models.
std::string model_cache_dir();

// The path given with -m, or the default model (SmolLM2-135M-Instruct Q4_1) in the cache.
// Throws lumen::Error that says how to download it when it is not there.
std::string resolve_model_path(const std::string& given);

}  // namespace lumen::cli
