#pragma once
// Where the model tests find the default model: $LUMEN_CACHE (or ~/.cache/lumen/models), as
// scripts/fetch_models.py puts it.
#include <cstdlib>
#include <string>

namespace lumen::testing {

inline std::string model_cache_dir() {
  const char* cache = std::getenv("LUMEN_CACHE");
  return cache != nullptr && *cache != '\0' ? cache : std::string(std::getenv("HOME")) + "/.cache/lumen/models";
}

inline std::string default_model_path() { return model_cache_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }

}  // namespace lumen::testing
