// `lumen imatrix -m MODEL -f TEXT -o OUT.gguf`: an importance matrix (the squared input
// activations of every layer weight over a calibration text) in llama.cpp's imatrix GGUF
// format, computed as llama-imatrix computes it (tools/imatrix.h), for `lumen quantize
// --imatrix` or llama-quantize --imatrix. Runs on the CPU.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/text_file.h"
#include "lumen/model.h"
#include "quantize/imatrix_file.h"
#include "tools/imatrix.h"
#include "tools/perplexity.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ImatrixCliOptions {
  std::string model;
  std::string text_file;
  std::string output = "imatrix.gguf";
  tools::ImatrixOptions run;
  unsigned threads = 0;
};

void run_imatrix(const ImatrixCliOptions& o) {
  if (o.text_file.empty()) fail("give the calibration text with -f FILE");
  const std::string text = read_text_file(o.text_file, "text file");
  const Model model = Model::load(resolve_model_path(o.model), {.device = "cpu", .threads = o.threads});
  // The same tokens as perplexity's (and llama-imatrix's): BOS first, control text left as text.
  const std::vector<int32_t> tokens = tools::perplexity_tokens(model, text);
  tools::ImatrixOptions run = o.run;
  run.dataset = o.text_file;
  const auto progress = [](int64_t window, int64_t n_windows) {
    fmt::print(stderr, "\rwindow {}/{}", window + 1, n_windows);
    if (window + 1 == n_windows) fmt::print(stderr, "\n");
    std::fflush(stderr);
  };
  const tools::ImatrixResult r = tools::compute_imatrix(model, tokens, run, progress);
  quantize::write_imatrix(o.output, r.imatrix);
  const double per_second = r.seconds > 0 ? static_cast<double>(r.tokens_evaluated) / r.seconds : 0.0;
  fmt::print("wrote {}: {} entries from {} windows of {} tokens\n", o.output, r.imatrix.entries.size(), r.n_windows,
             run.n_ctx);
  fmt::print(stderr, "evaluated {} tokens in {:.2f} s, {:.1f} tokens/s\n", r.tokens_evaluated, r.seconds, per_second);
}

}  // namespace

void add_imatrix_command(CLI::App& app) {
  auto o = std::make_shared<ImatrixCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "imatrix", "Importance matrix over a calibration text, as llama-imatrix computes it, for quantize --imatrix");
  cmd->add_option("-m,--model", o->model, "GGUF model (default: the default model)");
  cmd->add_option("-f,--file", o->text_file, "The calibration text (its exact bytes, at most 64 MiB)");
  cmd->add_option("-o,--output", o->output, "Output imatrix GGUF")->capture_default_str();
  cmd->add_option("-c,--ctx-size", o->run.n_ctx, "Tokens per window, each evaluated from an empty context")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", o->run.n_batch, "Tokens per forward pass (batch-size / ctx-size windows at once)")
      ->capture_default_str();
  cmd->add_option("--chunks", o->run.max_chunks, "At most this many windows (-1: all the text makes)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (default: all cores)");
  cmd->callback([o] { run_imatrix(*o); });
}

}  // namespace lumen::cli
