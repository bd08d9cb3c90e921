#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "model/presets.h"
#include "model/synth.h"
#include "util/error.h"

namespace lumen::cli {

namespace {
struct SynthCliOptions {
  model::SynthOptions synth;
  std::string type_name = "Q4_0";
  std::string output;
  uint64_t layers = 0;
};
}  // namespace

void add_synth_command(CLI::App& app) {
  auto options = std::make_shared<SynthCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a GGUF with random weights in the shapes of a preset model");
  std::string preset_names;  // from the preset table, so the help never lags behind it
  for (const model::Preset& preset : model::presets()) {
    preset_names += (preset_names.empty() ? "" : " | ") + std::string(preset.name);
  }
  cmd->add_option("preset", options->synth.preset, preset_names)->required();
  cmd->add_option("-o,--output", options->output, "Output GGUF path")->required();
  cmd->add_option("--type", options->type_name,
                  "Type of the weight matrices (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                  "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS; Q4_K_M: llama.cpp's Q4_K/Q6_K mixture; "
                  "MXFP4_MOE: MXFP4 experts, Q8_0 elsewhere)")
      ->capture_default_str();
  cmd->add_option("--vocab", options->synth.vocab_path,
                  "GGUF whose tokenizer to copy (default: the default model)");
  cmd->add_option("--seed", options->synth.seed, "Random seed")->capture_default_str();
  cmd->add_option("--layers", options->layers, "Fewer layers than the preset (for tests)");
  cmd->add_option("-t,--threads", options->synth.threads, "Threads (default: all)");
  cmd->callback([options] {
    options->synth.q4_k_m = options->type_name == "Q4_K_M";
    options->synth.mxfp4_moe = options->type_name == "MXFP4_MOE";
    auto type = tensor::dtype_from_name(options->synth.q4_k_m      ? "Q4_K"
                                        : options->synth.mxfp4_moe ? "Q8_0"
                                                                   : options->type_name);
    if (!type) fail("unknown tensor type '{}'", options->type_name);
    options->synth.type = *type;
    options->synth.vocab_path = resolve_model_path(options->synth.vocab_path);
    if (options->layers != 0) options->synth.block_count = options->layers;
    model::SynthReport report = model::write_synthetic_model(options->synth, options->output);
    for (const std::string& note : report.substitutions) fmt::print(stderr, "note: {}\n", note);
    fmt::print("wrote {}: {} tensors, vocab {}, {} bytes\n", options->output, report.tensors,
               report.vocab_size, report.file_bytes);
  });
}

}  // namespace lumen::cli
