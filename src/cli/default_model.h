#pragma once
// Where Lumen keeps downloaded models, and which one it uses when -m is not given.
#include <string>

namespace lumen::cli {

// $LUMEN_CACHE, else ~/.cache/lumen/models.
std::string model_cache_dir();

// The default model's file name in the cache (SmolLM2-135M-Instruct Q4_1).
const char* default_model_file();

// A warning for chat (lumen chat, the server's chat endpoints and page) when the model at `path`
// is a catalog model marked as a base model: it continues text and was not tuned to follow a
// chat template, so its replies read as nonsense and nothing else would say why. Empty otherwise.
std::string base_model_chat_warning(const std::string& path);

// What -m names: a path (one that exists always wins), else a catalog name (`smollm2`, see
// model_catalog.h) resolved to its file in the cache; with nothing given, the default model
// (SmolLM2-135M-Instruct Q4_1) in the cache. Throws lumen::Error saying to run `lumen pull` when
// the model is not in the cache; it never downloads.
std::string resolve_model_path(const std::string& given);

}  // namespace lumen::cli
