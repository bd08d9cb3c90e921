// `lumen prune IN.gguf OUT.gguf (--keep-layers L | --layers LIST)`: a model with only some of
// its layers (prune/prune_model.h), for a layer-pruned draft model (speculative decoding's
// "draft_model" method, in Lumen or any engine) or a smaller model to study.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/byte_units.h"
#include "cli/commands.h"
#include "prune/layer_list.h"
#include "prune/prune_model.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct PruneCliOptions {
  std::string input;
  std::string output;
  int64_t keep_layers = 0;
  std::string layers;
};

void run_prune(const PruneCliOptions& o) {
  if ((o.keep_layers > 0) == !o.layers.empty()) fail("prune: give --keep-layers L or --layers LIST (one of them)");
  if (o.keep_layers < 0) fail("prune: --keep-layers must be at least 1 (got {})", o.keep_layers);
  const std::vector<uint64_t> keep = o.layers.empty() ? prune::first_layers(static_cast<uint64_t>(o.keep_layers))
                                                      : prune::parse_layer_list(o.layers);
  const prune::PruneReport r = prune::prune_model(o.input, o.output, keep);
  for (const std::string& key : r.per_layer_keys) fmt::print(stderr, "per-layer array cut to the kept layers: {}\n", key);
  fmt::print("wrote {}: {} of {} layers, {} of {} tensors, {:.2f} MiB -> {:.2f} MiB\n", o.output, r.layers_out,
             r.layers_in, r.tensors_out, r.tensors_in, mib(r.bytes_in), mib(r.bytes_out));
}

}  // namespace

void add_prune_command(CLI::App& app) {
  auto options = std::make_shared<PruneCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "prune", "Write a GGUF model with only some of its layers (a draft model for speculative decoding)");
  cmd->add_option("input", options->input, "Input GGUF")->required();
  cmd->add_option("output", options->output, "Output GGUF (written under a temporary name, then renamed)")->required();
  cmd->add_option("--keep-layers", options->keep_layers, "Keep the first L layers");
  cmd->add_option("--layers", options->layers, "Keep these layers, e.g. 0-3,7,12 (ascending)");
  cmd->callback([options] { run_prune(*options); });
}

}  // namespace lumen::cli
