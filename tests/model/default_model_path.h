#pragma once
// Where the model tests find the default model: $LUMEN_CACHE (or ~/.cache/lumen/models), as
// scripts/fetch_models.py puts it.
#include <cstdlib>
#include <string>

namespace lumen::testing {

inline std::string default_model_path() {
  const char* cache = std::getenv("LUMEN_CACHE");
  const std::string dir = cache != nullptr && *cache != '\0'
                              ? cache
                              : std::string(std::getenv("HOME")) + "/.cache/lumen/models";
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace lumen::testing
