// `lumen run`: a prompt in, the continuation streamed to stdout, speeds to stderr.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/sampling_options.h"
#include "engine/generator.h"
#include "engine/loaded_model.h"
#include "sampling/sampler.h"
#include "tokenizer/streaming_detokenizer.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int64_t n_predict = 128;
  int64_t context = 4096;
  unsigned threads = 0;
  bool ignore_eos = false;
  sampling::SamplingParams sampling;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool ends_generation(const tokenizer::Vocab& vocab, int32_t id) {
  return vocab.ends_generation(id);
}

void run(const RunOptions& options) {
  backend::CpuBackend backend(options.threads);
  engine::LoadedModel model = engine::LoadedModel::load(resolve_model_path(options.model), backend);
  const int64_t context =
      std::min<int64_t>(options.context, static_cast<int64_t>(model.hparams.context_length));
  engine::Generator generator(model, backend, context);

  // A raw prompt may spell special tokens ("<|im_start|>"): like llama.cpp's CLI, parse them.
  std::vector<int32_t> prompt =
      model.tokenizer.encode(options.prompt, {.add_special = true, .parse_special = true});
  if (prompt.empty()) fail("the prompt is empty");
  sampling::Sampler sampler(options.sampling);
  tokenizer::StreamingDetokenizer detokenizer(model.tokenizer);

  auto start = Clock::now();
  std::span<const float> logits = generator.feed(prompt);
  const double prompt_seconds = seconds_since(start);

  start = Clock::now();
  int64_t generated = 0;
  while (generated < options.n_predict && generator.position() < context) {
    int32_t next = sampler.sample(logits);
    if (!options.ignore_eos && ends_generation(model.tokenizer.vocab(), next)) break;
    ++generated;
    std::string text = detokenizer.push(next);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (generated == options.n_predict || generator.position() >= context) break;
    logits = generator.feed(std::span(&next, 1));
  }
  std::string rest = detokenizer.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  const double gen_seconds = seconds_since(start);
  fmt::print(stderr, "prompt: {} tokens in {:.3f} s, {:.1f} tokens/s\n", prompt.size(),
             prompt_seconds, static_cast<double>(prompt.size()) / prompt_seconds);
  fmt::print(stderr, "generation: {} tokens in {:.3f} s, {:.1f} tokens/s\n", generated, gen_seconds,
             generated > 0 ? static_cast<double>(generated) / gen_seconds : 0.0);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Continue a prompt, streaming the text to stdout");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("-p,--prompt", options->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", options->n_predict, "Tokens to generate")->capture_default_str();
  add_sampling_options(cmd, options->sampling);
  cmd->add_option("-t,--threads", options->threads, "Threads (default: all cores)");
  cmd->add_option("-c,--ctx-size", options->context, "Context length (tokens)")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", options->ignore_eos, "Keep generating past end-of-sequence");
  cmd->callback([options] { run(*options); });
}

}  // namespace lumen::cli
