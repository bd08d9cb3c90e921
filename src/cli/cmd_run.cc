// `lumen run`: a prompt in, the continuation streamed to stdout, speeds to stderr.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "benchmark/expert_load.h"
#include "cli/commands.h"
#include "cli/flag_names.h"
#include "cli/default_model.h"
#include "cli/device_option.h"
#include "cli/interrupt.h"
#include "cli/run_completions.h"
#include "cli/run_images.h"
#include "cli/sampling_options.h"
#include "cli/structured_output_flags.h"
#include "cli/stream_completion.h"
#include "cli/model_parallel_flags.h"
#include "cli/text_file.h"
#include "lumen/engine.h"
#include "lumen/model.h"
#include "cli/context_shift_flags.h"
#include "cli/kv_cache_dtype_flag.h"
#include "cli/speculative_flag.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct RunOptions {
  std::string model;
  std::string mmproj;
  std::vector<std::string> images;  // --image files, placed at the prompt's image markers
  std::string prompt;
  std::string prompt_file;
  int64_t n_predict = 128;  // -1: until an end-of-generation token or the context is full
  int64_t context = 4096;
  unsigned threads = 0;
  std::string device;
  bool ignore_eos = false;
  bool keep_out_of_window_kv = false;
  int32_t beam_width = 0;  // > 0: beam search of this width
  SamplingParams sampling;
  ContextShiftFlags context_shift;
  SpeculativeFlag speculative;
  KvCacheDtypeFlag kv_cache_dtype;
  ModelParallelFlags parallel;

  // Whether the output is several completions or log-probability tables, printed once the
  // request ends (run_completions.h), rather than one text streamed as it is made.
  bool needs_engine_report() const {
    return sampling.n > 1 || sampling.best_of || sampling.use_beam_search || beam_width > 0 ||
           sampling.prompt_logprobs || sampling.logprobs;
  }
};

void emit(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

std::string tokens_text(int64_t n) { return fmt::format("{} token{}", n, n == 1 ? "" : "s"); }

// A rate over no measurable time (one token, or none) is not a rate.
std::string rate_text(int64_t tokens, double seconds) {
  return tokens > 0 && seconds > 0 ? fmt::format("{:.1f} tokens/s", static_cast<double>(tokens) / seconds) : "n/a";
}

// The prompt's time runs to the first token (sampled from the prompt's last logits); the
// generation rate is over the tokens after it, one decode step each.
void print_speeds(size_t prompt_tokens, double prompt_seconds, int64_t generated, double gen_seconds) {
  const auto prompt = static_cast<int64_t>(prompt_tokens);
  fmt::print(stderr, "prompt: {} in {:.3f} s, {}\n", tokens_text(prompt), prompt_seconds,
             rate_text(prompt, prompt_seconds));
  fmt::print(stderr, "generation: {} in {:.3f} s, {}\n", tokens_text(generated), gen_seconds,
             rate_text(generated - 1, gen_seconds));
}

// Expert parallelism: what each rank's experts took and what crossed between ranks.
void print_expert_parallel_summary(const Model& model) {
  if (model.info().expert_parallel_size <= 1) return;
  if (const auto load = benchmark::expert_load(model)) {
    fmt::print(stderr, "{}; rank 0 holds {} bytes of weights\n", benchmark::expert_parallel_summary(*load),
               model.info().weight_bytes);
  }
}

void run(RunOptions options) {
  if (!options.prompt.empty() && !options.prompt_file.empty()) fail("-p and -f are exclusive: give the prompt one way");
  if (options.prompt.empty() && options.prompt_file.empty()) fail("give the prompt with -p TEXT or -f FILE");
  if (!options.prompt_file.empty()) options.prompt = read_text_file(options.prompt_file, "prompt file");
  if (!options.images.empty() && options.needs_engine_report()) {
    fail("--image streams one completion: it does not go with -n > 1, beams or log-probabilities");
  }
  if (options.n_predict < -1) fail("-n must be -1 (until the end or the context is full) or a count >= 0");
  SamplingParams params = options.sampling;
  // -1: as many as fit (set below, once the prompt's length is known); 0: the prompt alone,
  // which the engine computes for a token that is not shown.
  params.max_tokens = std::max<int64_t>(options.n_predict, 1);
  params.ignore_eos = options.ignore_eos;
  if (options.beam_width > 0) {
    params.use_beam_search = true;
    params.best_of = options.beam_width;
  }
  check_with_flag_names([&] { params.validate(); });  // before the model loads: a bad flag fails at once
  const SpeculativeConfig speculative = options.speculative.config();
  const Model model = Model::load(
      resolve_model_path(options.model),
      options.parallel.applied_to({.device = options.device, .threads = options.threads, .mmproj = options.mmproj}));
  if (model.info().parallel_rank > 0) {
    follow_model_parallel_leader(model);
    return;
  }
  print_gpu_layers("run", model.info());
  const int64_t context = std::min<int64_t>(options.context, model.info().context_length);

  // A raw prompt may spell special tokens ("<|im_start|>"): like llama.cpp's CLI, parse them.
  std::vector<int32_t> prompt = model.tokenize(options.prompt, {.add_special = true, .parse_special = true});
  if (prompt.empty()) fail("the prompt is empty");
  check_with_flag_names([&] { params.validate_for_vocab(model.info().vocab_size); });
  if (static_cast<int64_t>(prompt.size()) >= context) {
    fail("the prompt has {} tokens; the context holds {} (-c)", prompt.size(), context);
  }
  if (options.n_predict < 0) params.max_tokens = context - static_cast<int64_t>(prompt.size());
  // Beam search holds up to twice its width while a round's candidates are forked.
  const int32_t width = std::max(params.n, params.best_of.value_or(params.n));
  const int32_t sequences = params.use_beam_search ? 2 * width : width;
  EngineConfig config = single_user_config(context, sequences);
  options.context_shift.apply(config);
  config.free_out_of_window_kv = !options.keep_out_of_window_kv;
  config.kv_cache_dtype = options.kv_cache_dtype.value();
  config.kv_cache_rotation = options.kv_cache_dtype.rotation();
  config.speculative = speculative;
  config.jump_forward = !options.speculative.no_jump_forward;
  Engine engine(model, config);
  std::vector<PromptImage> images = place_run_images(engine, model, options.images, prompt);
  if (static_cast<int64_t>(prompt.size()) >= context) {
    fail("the prompt has {} tokens with its images; the context holds {} (-c)", prompt.size(), context);
  }
  if (options.n_predict < 0) params.max_tokens = context - static_cast<int64_t>(prompt.size());
  InterruptHandler interrupt;
  interrupt.arm();
  if (options.needs_engine_report()) {
    run_completions(engine, model, prompt, params, interrupt);
    print_expert_parallel_summary(model);
    return;
  }
  const bool show = options.n_predict != 0;
  const size_t prompt_tokens = prompt.size();
  const StreamedCompletion done = stream_completion(
      engine, std::move(prompt), params, interrupt,
      [show](const std::string& text) {
        if (show) emit(text);
      },
      std::move(images));
  // An end-of-generation token ends the text; it is not part of it.
  int64_t generated = show ? static_cast<int64_t>(done.tokens.size()) : 0;
  if (generated > 0 && done.finish == FinishReason::Stop && model.ends_generation(done.tokens.back())) --generated;
  // The text ends its line before the speeds go to stderr (flushed first: on a shared terminal
  // or a pipe the two streams interleave in the order they are flushed).
  emit("\n");
  interrupt.disarm();
  print_speeds(prompt_tokens, done.first_token_seconds, generated, done.total_seconds - done.first_token_seconds);
  // Cut by the context rather than by -n: say so, and how to get more.
  if (done.finish == FinishReason::Length && static_cast<int64_t>(prompt_tokens + done.tokens.size()) >= context) {
    fmt::print(stderr,
               "generation stopped at the end of the context ({}; -c sets it, --context-overflow shift goes on)\n",
               tokens_text(context));
  }
  if (speculative.method != SpeculativeMethod::None) fmt::print(stderr, "{}\n", speculation_summary(engine.stats()));
  print_expert_parallel_summary(model);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Continue a prompt, streaming the text to stdout");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("--mmproj", options->mmproj, "A vision-language model's projector file (llama.cpp's mmproj GGUF)");
  cmd->add_option("--image", options->images,
                  "An image file (PNG, JPEG, WebP, GIF) for a vision-language model (--mmproj); repeat for several. "
                  "Each stands at the model's image marker in the prompt (\"<image>\"), or before the prompt")
      ->take_all();
  cmd->add_option("-p,--prompt", options->prompt, "Prompt text");
  cmd->add_option("-f,--file", options->prompt_file,
                  "Read the prompt from this file (its exact bytes, at most 64 MiB; /dev/stdin for a pipe)");
  cmd->add_option("-n,--n-predict", options->n_predict,
                  "Tokens to generate (-1: until the end of generation or the context is full)")
      ->capture_default_str();
  add_sampling_options(cmd, options->sampling);
  add_stop_option(cmd, options->sampling);
  add_structured_output_flags(cmd, options->sampling);
  cmd->add_option("-t,--threads", options->threads, "Threads (default: all cores)");
  add_device_option(cmd, options->device);
  add_model_parallel_options(cmd, options->parallel);
  cmd->add_option("-c,--ctx-size", options->context,
                  "Context length in tokens, capped at the model's (serve defaults to the model's whole context: its "
                  "KV cache is paged and shared, --max-model-len)")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", options->ignore_eos, "Keep generating past end-of-sequence");
  cmd->add_flag("--keep-out-of-window-kv", options->keep_out_of_window_kv,
                "Sliding-window layers keep every position's K/V (default: only their window's; --kv-eviction "
                "needs every position)");
  options->context_shift.add_to(cmd);
  options->kv_cache_dtype.add_to(cmd);
  options->speculative.add_to(cmd);
  cmd->add_option("--min-tokens", options->sampling.min_tokens, "Generate at least this many tokens");
  cmd->add_option("--completions", options->sampling.n,
                  "Completions of the prompt, sharing its KV blocks (printed one after another)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--best-of", options->sampling.best_of,
                  "Sample this many and print the --completions with the highest mean log-probability")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--beam-width", options->beam_width, "Beam search of this width (prints --completions best)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--length-penalty", options->sampling.length_penalty, "Beam score = log-probability / length^this")
      ->capture_default_str();
  cmd->add_flag("--early-stopping", options->sampling.early_stopping,
                "Beam search stops once beam-width hypotheses have ended");
  cmd->add_option("--logprobs", options->sampling.logprobs,
                  "Print each generated token's log-probability (and K alternatives) to stderr")
      ->check(CLI::Range(0, 20));
  cmd->add_option("--prompt-logprobs", options->sampling.prompt_logprobs,
                  "Print each prompt token's log-probability (and K alternatives) to stderr")
      ->check(CLI::Range(0, 20));
  cmd->footer("Ctrl-C stops the generation and still prints the speeds.");
  cmd->callback([options] { run(*options); });
}

}  // namespace lumen::cli
