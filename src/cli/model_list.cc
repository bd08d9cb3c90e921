#include "cli/model_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>
#include <vector>

#include "cli/default_model.h"
#include "gguf/file.h"
#include "quantize/quant_mix.h"
#include "util/error.h"

namespace lumen::cli {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

ordered_json describe(const fs::directory_entry& file, const Catalog& catalog) {
  const std::string name = file.path().filename().string();
  ordered_json model;
  model["file"] = name;
  model["path"] = file.path().string();
  std::error_code ec;
  model["bytes"] = file.is_regular_file(ec) ? file.file_size(ec) : 0;
  const CatalogEntry* entry = find_catalog_file(catalog, name);
  model["catalog_name"] = entry != nullptr ? ordered_json(entry->name) : ordered_json(nullptr);
  // What -m takes for it (its first alias), whether it chats, and whether -m may be left out.
  model["short_name"] = entry == nullptr ? ordered_json(nullptr)
                                         : ordered_json(entry->aliases.empty() ? entry->name : entry->aliases.front());
  model["chat"] = entry != nullptr ? ordered_json(entry->chat) : ordered_json(nullptr);
  model["default"] = name == default_model_file();
  model["architecture"] = nullptr;
  model["quantization"] = nullptr;
  try {
    if (!file.is_regular_file(ec)) fail("not a regular file");
    const gguf::GgufFile gguf_file = gguf::GgufFile::open(file.path().string());
    const auto& md = gguf_file.metadata();
    model["architecture"] = md.find_string("general.architecture").value_or("unknown");
    const auto ftype = md.find_unsigned("general.file_type");
    const auto quant = ftype && *ftype <= UINT32_MAX ? quantize::mix_name_for_ftype(static_cast<uint32_t>(*ftype)) : std::nullopt;
    model["quantization"] = quant ? std::string(*quant) : ftype ? fmt::format("file_type {}", *ftype) : "unknown";
  } catch (const std::exception& e) {
    model["error"] = e.what();
  }
  return model;
}

std::string human_size(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

}  // namespace

ordered_json model_list_report(const std::string& cache_dir, const Catalog& catalog) {
  ordered_json report;
  report["cache"] = cache_dir;
  ordered_json models = ordered_json::array();
  std::vector<fs::directory_entry> files;
  std::error_code ec;
  for (fs::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".gguf") files.push_back(*it);
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  std::vector<std::string> present;
  for (const fs::directory_entry& file : files) {
    models.push_back(describe(file, catalog));
    present.push_back(file.path().filename().string());
  }
  report["models"] = std::move(models);
  ordered_json available = ordered_json::array();
  for (const CatalogEntry& entry : catalog) {
    if (std::find(present.begin(), present.end(), entry.file) == present.end()) {
      ordered_json parts = ordered_json::array();
      for (const CatalogPart& part : entry.parts) {
        parts.push_back({{"project", part.project}, {"version", part.version}, {"member", part.member}});
      }
      available.push_back({{"name", entry.name}, {"aliases", entry.aliases}, {"file", entry.file},
                           {"bytes", entry.bytes}, {"sha256", entry.sha256}, {"chat", entry.chat},
                           {"default", entry.file == default_model_file()}, {"parts", std::move(parts)}});
    }
  }
  report["not_downloaded"] = std::move(available);
  return report;
}

namespace {

// " [default]" and " [base model: continues text, no chat]" where they apply.
std::string notes(const ordered_json& model) {
  std::string text;
  if (model.value("default", false)) text += " [default]";
  if (model.contains("chat") && model["chat"].is_boolean() && !model["chat"].get<bool>()) {
    text += " [base model: continues text, no chat]";
  }
  return text;
}

}  // namespace

std::string render_model_list_text(const ordered_json& report) {
  std::string out = fmt::format("Models in {}:\n", report["cache"].get<std::string>());
  if (report["models"].empty()) out += "  (none)\n";
  // Columns: file, size, architecture, quantization, catalog name. A file that did not parse
  // has its error where the architecture would be.
  using Row = std::array<std::string, 5>;
  std::vector<Row> rows = {{"FILE", "SIZE", "ARCH", "QUANT", "NAME (-m)"}};
  std::vector<std::string> errors = {""};
  for (const auto& model : report["models"]) {
    const auto text = [&](const char* key) { return model[key].is_string() ? model[key].get<std::string>() : "-"; };
    rows.push_back({text("file"), human_size(model["bytes"].get<uint64_t>()), text("architecture"), text("quantization"),
                    text("short_name") + notes(model)});
    errors.push_back(model.contains("error") ? "error: " + model["error"].get<std::string>() : "");
  }
  std::array<size_t, 5> width{};
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < 5; ++c) {
      if (errors[r].empty() || c < 2) width[c] = std::max(width[c], rows[r][c].size());
    }
  }
  const auto pad = [](const std::string& text, size_t w) { return text + std::string(w - text.size() + 2, ' '); };
  for (size_t r = 0; r < rows.size() && !report["models"].empty(); ++r) {
    std::string line = "  " + pad(rows[r][0], width[0]) + pad(rows[r][1], width[1]);
    line += errors[r].empty() ? pad(rows[r][2], width[2]) + pad(rows[r][3], width[3]) + rows[r][4] : errors[r];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (!report["not_downloaded"].empty()) {
    out += "Not downloaded (lumen pull NAME):\n";
    std::vector<std::pair<std::string, std::string>> names;
    size_t name_width = 0;
    for (const auto& entry : report["not_downloaded"]) {
      const auto aliases = entry["aliases"].get<std::vector<std::string>>();
      names.emplace_back(entry["name"].get<std::string>() +
                             (aliases.empty() ? "" : fmt::format(" ({})", fmt::join(aliases, ", "))) + notes(entry),
                         human_size(entry["bytes"].get<uint64_t>()));
      name_width = std::max(name_width, names.back().first.size());
    }
    for (const auto& [name, size] : names) out += "  " + pad(name, name_width) + size + "\n";
  }
  return out;
}

}  // namespace lumen::cli
