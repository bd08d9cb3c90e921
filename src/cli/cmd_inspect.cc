#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/inspect_report.h"
#include "gguf/file.h"

namespace lumen::cli {

namespace {
struct InspectOptions {
  std::string path;
  bool json = false;
  bool metadata = false;
};
}  // namespace

void add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Describe a GGUF model: architecture, hyperparameters, tokenizer, tensors");
  cmd->add_option("file", options->path, "GGUF file (default: the default model in the cache)");
  cmd->add_option("-m,--model", options->path, "Same as the positional file");
  cmd->add_flag("--json", options->json, "Print JSON instead of text");
  cmd->add_flag("--metadata", options->metadata,
                "Also list every metadata key with its type and value (arrays summarised)");
  cmd->callback([options] {
    gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(options->path));
    auto report = inspect_report(file, options->metadata);
    std::string text =
        options->json
            ? report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"
            : render_inspect_text(report);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace lumen::cli
