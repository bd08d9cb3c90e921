// `lumen pull NAME` and `lumen list`: getting catalog models into the cache and seeing what is there.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/model_catalog.h"
#include "cli/model_list.h"
#include "cli/model_pull.h"
#include "cli/stop_signals.h"
#include "util/error.h"

namespace lumen::cli {

void add_pull_command(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "pull", "Download a model from the catalog into the cache ($LUMEN_CACHE), checking its sha256; resumes");
  cmd->add_option("name", *name, "Catalog name, e.g. smollm2 or gemma3-270m:q4_k_m")->required();
  cmd->callback([name] {
    const Catalog catalog = active_catalog();
    const CatalogEntry* entry = find_catalog_entry(catalog, *name);
    if (entry == nullptr) fail_unknown_model(catalog, *name);
    PullResult result;
    StopSignals stop;  // Ctrl-C stops the download, and pull_model cleans up before the process ends
    try {
      result = pull_model(*entry, model_cache_dir());
    } catch (const Error& e) {
      if (!stop_requested()) throw;
      fmt::print(stderr, "lumen pull: {}\n", e.what());
      stop.die_of_received();
    }
    fmt::print(stderr, "lumen pull: {} {} {}\n", entry->name, result.downloaded ? "downloaded to" : "is already at",
               result.path);
    fmt::print("{}\n", result.path);
  });
}

void add_list_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("list", "List the models in the cache: size, architecture, quantization");
  cmd->add_flag("--json", *json, "Print JSON instead of text");
  cmd->callback([json] {
    const auto report = model_list_report(model_cache_dir(), active_catalog());
    const std::string text =
        *json ? report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"
              : render_model_list_text(report);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace lumen::cli
