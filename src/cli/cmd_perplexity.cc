// `lumen perplexity`: the perplexity of a model over a text file, computed as llama.cpp's
// llama-perplexity computes it by default (tools/perplexity.h), so the two compare number for
// number; and the KL divergence against a base model's saved log-probabilities, in
// llama-perplexity's own file format (--kl-divergence-base / --kl-divergence).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/context_shift_flags.h"
#include "cli/default_model.h"
#include "cli/device_option.h"
#include "cli/kv_cache_dtype_flag.h"
#include "cli/text_file.h"
#include "lumen/model.h"
#include "tools/forced_decode_perplexity.h"
#include "tools/perplexity.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct PerplexityCliOptions {
  std::string model;
  std::string text_file;
  tools::PerplexityOptions run;
  std::string base_file;  // --kl-divergence-base
  bool kl_divergence = false;
  bool json = false;
  std::string device;
  KvCacheDtypeFlag kv_cache_dtype;
  bool forced_decode = false;  // score token by token through the engine
  ContextShiftFlags eviction;  // only its --kv-eviction (with --forced-decode)
  int64_t in_flight = 8;
};

double per_second(int64_t tokens, double seconds) {
  return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
}

void print_speed(int64_t tokens, double seconds) {
  fmt::print(stderr, "evaluated {} tokens in {:.2f} s, {:.1f} tokens/s\n", tokens, seconds, per_second(tokens, seconds));
}

void run_perplexity(const PerplexityCliOptions& o, const Model& model) {
  if (o.text_file.empty()) fail("give the text with -f FILE");
  const std::string text = read_text_file(o.text_file, "text file");
  const std::vector<int32_t> tokens = tools::perplexity_tokens(model, text);
  tools::PerplexityOptions run = o.run;
  run.write_base = o.base_file;
  const auto progress = [&](const tools::WindowProgress& p) {
    if (o.json) return;
    // llama-perplexity's running line: [window]ppl,
    fmt::print("[{}]{:.4f},", p.window + 1, p.ppl);
    if (p.window + 1 == p.n_windows) fmt::print("\n");
    std::fflush(stdout);
  };
  tools::PerplexityResult r;
  if (o.forced_decode) {
    if (!o.base_file.empty()) fail("--forced-decode does not write a --kl-divergence-base file");
    tools::ForcedDecodeOptions forced{.eviction = {}, .in_flight = o.in_flight};
    o.eviction.apply(forced.eviction);
    r = tools::compute_forced_decode_perplexity(model, tokens, run, forced, progress);
  } else {
    r = tools::compute_perplexity(model, tokens, run, progress);
  }
  if (o.json) {
    nlohmann::ordered_json j = {{"model", model.info().path},
                                {"n_ctx", r.n_ctx},
                                {"n_batch", o.run.n_batch},
                                {"kv_cache_dtype", kv_cache_dtype_name(o.run.kv_cache_dtype)},
                                {"kv_cache_rotation", o.run.kv_cache_rotation},
                                {"mode", o.forced_decode ? "forced-decode" : "one-pass"},
                                {"kv_eviction", o.eviction.eviction.empty() ? "none" : o.eviction.eviction},
                                {"n_windows", r.n_windows},
                                {"text_tokens", tokens.size()},
                                {"tokens_evaluated", r.tokens_evaluated},
                                {"tokens_scored", r.tokens_scored},
                                {"ppl", r.ppl.value},
                                {"ppl_error", r.ppl.error},
                                {"running_ppl", r.running_ppl},
                                {"seconds", r.seconds},
                                {"tokens_per_second", per_second(r.tokens_evaluated, r.seconds)}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("Final estimate: PPL = {:.4f} +/- {:.5f}\n", r.ppl.value, r.ppl.error);
    std::fflush(stdout);  // before stderr, so a terminal shows them in order
    fmt::print(stderr, "{} windows of {} tokens, {} scored\n", r.n_windows, r.n_ctx, r.tokens_scored);
    if (!o.base_file.empty()) fmt::print(stderr, "wrote the base log-probabilities to {}\n", o.base_file);
  }
  print_speed(r.tokens_evaluated, r.seconds);
}

nlohmann::ordered_json estimate_json(const tools::Estimate& e) { return {{"value", e.value}, {"error", e.error}}; }

nlohmann::ordered_json percentiles_json(const std::vector<std::pair<double, double>>& list) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (auto [fraction, value] : list) j[fmt::format("{:g}", 100 * fraction)] = value;
  return j;
}

void print_kld_report(const tools::KldReport& r) {
  fmt::print("====== Perplexity statistics ======\n");
  fmt::print("Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", r.ppl.value, r.ppl.error);
  fmt::print("Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", r.ppl_base.value, r.ppl_base.error);
  fmt::print("Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100 * r.log_ppl_correlation);
  fmt::print("Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", r.log_ppl_ratio.value, r.log_ppl_ratio.error);
  fmt::print("\n====== KL divergence statistics ======\n");
  fmt::print("Mean    KLD: {:10.6f} ± {:10.6f}\n", r.kld.value, r.kld.error);
  fmt::print("Maximum KLD: {:10.6f}\n", r.kld_max);
  for (auto [f, v] : r.kld_percentiles) {
    if (f < 0.5) break;
    fmt::print("{:4.1f}%   KLD: {:10.6f}\n", 100 * f, v);
  }
  fmt::print("Median  KLD: {:10.6f}\n", r.kld_median);
  for (auto [f, v] : r.kld_percentiles) {
    if (f < 0.5) fmt::print("{:4.1f}%   KLD: {:10.6f}\n", 100 * f, v);
  }
  fmt::print("Minimum KLD: {:10.6f}\n", r.kld_min);
  fmt::print("\n====== Token probability statistics ======\n");
  fmt::print("Mean    Δp: {:6.3f} ± {:5.3f} %\n", 100 * r.p_diff.value, 100 * r.p_diff.error);
  fmt::print("Maximum Δp: {:6.3f}%\n", 100 * r.p_diff_max);
  for (auto [f, v] : r.p_diff_percentiles) {
    if (f < 0.5) break;
    fmt::print("{:4.1f}%   Δp: {:6.3f}%\n", 100 * f, 100 * v);
  }
  fmt::print("Median  Δp: {:6.3f}%\n", 100 * r.p_diff_median);
  for (auto [f, v] : r.p_diff_percentiles) {
    if (f < 0.5) fmt::print("{:4.1f}%   Δp: {:6.3f}%\n", 100 * f, 100 * v);
  }
  fmt::print("Minimum Δp: {:6.3f}%\n", 100 * r.p_diff_min);
  fmt::print("RMS Δp    : {:6.3f} ± {:5.3f} %\n", 100 * r.p_diff_rms.value, 100 * r.p_diff_rms.error);
  fmt::print("Same top p: {:6.3f} ± {:5.3f} %\n", 100 * r.same_top.value, 100 * r.same_top.error);
}

void run_kl_divergence(const PerplexityCliOptions& o, const Model& model) {
  if (o.base_file.empty()) fail("--kl-divergence compares with a base: give its file with --kl-divergence-base FILE");
  if (!o.text_file.empty()) fail("--kl-divergence evaluates the tokens stored in the base file; leave out -f");
  const auto progress = [&](const tools::KldProgress& p) {
    if (o.json) return;
    fmt::print(stderr, "{:4}    PPL {:9.4f} ± {:8.4f}    KLD {:9.5f} ± {:8.5f}    same top {:6.2f}%\n", p.window + 1,
               p.ppl.value, p.ppl.error, p.kld.value, p.kld.error, 100 * p.same_top);
  };
  const tools::KldResult r = tools::compute_kl_divergence(model, o.base_file, o.run, progress);
  const tools::KldReport& k = r.report;
  if (o.json) {
    nlohmann::ordered_json j = {{"model", model.info().path},
                                {"base", o.base_file},
                                {"n_ctx", r.n_ctx},
                                {"n_windows", r.n_windows},
                                {"tokens_evaluated", r.tokens_evaluated},
                                {"tokens_scored", k.count},
                                {"ppl", estimate_json(k.ppl)},
                                {"ppl_base", estimate_json(k.ppl_base)},
                                {"log_ppl_correlation", k.log_ppl_correlation},
                                {"log_ppl_ratio", estimate_json(k.log_ppl_ratio)},
                                {"kld", estimate_json(k.kld)},
                                {"kld_max", k.kld_max},
                                {"kld_median", k.kld_median},
                                {"kld_min", k.kld_min},
                                {"kld_percentiles", percentiles_json(k.kld_percentiles)},
                                {"p_diff", estimate_json(k.p_diff)},
                                {"p_diff_max", k.p_diff_max},
                                {"p_diff_median", k.p_diff_median},
                                {"p_diff_min", k.p_diff_min},
                                {"p_diff_percentiles", percentiles_json(k.p_diff_percentiles)},
                                {"p_diff_rms", estimate_json(k.p_diff_rms)},
                                {"same_top", estimate_json(k.same_top)},
                                {"seconds", r.seconds},
                                {"tokens_per_second", per_second(r.tokens_evaluated, r.seconds)}};
    fmt::print("{}\n", j.dump(2));
  } else {
    print_kld_report(k);
  }
  print_speed(r.tokens_evaluated, r.seconds);
}

void run(PerplexityCliOptions o) {
  o.run.kv_cache_dtype = o.kv_cache_dtype.value();
  o.run.kv_cache_rotation = o.kv_cache_dtype.rotation();
  const Model model = Model::load(resolve_model_path(o.model), {.device = o.device, .threads = o.run.threads});
  if (!o.eviction.eviction.empty() && !o.forced_decode) {
    fail("--kv-eviction needs --forced-decode (one forward pass per window evicts nothing)");
  }
  if (o.kl_divergence) {
    if (o.forced_decode) fail("--kl-divergence compares one-pass windows; leave out --forced-decode");
    run_kl_divergence(o, model);
  } else {
    run_perplexity(o, model);
  }
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<PerplexityCliOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a model over a text, as llama-perplexity computes it");
  cmd->add_option("-m,--model", o->model, "GGUF model (default: the default model)");
  cmd->add_option("-f,--file", o->text_file, "The text (its exact bytes, at most 64 MiB)");
  cmd->add_option("-c,--ctx-size", o->run.n_ctx, "Tokens per window: the first half is context, the second half is scored")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", o->run.n_batch, "Tokens per forward pass (batch-size / ctx-size windows at once)")
      ->capture_default_str();
  cmd->add_option("--chunks", o->run.max_chunks, "At most this many windows (-1: all the text makes)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->run.threads, "Threads (default: all cores)");
  add_device_option(cmd, o->device);
  o->kv_cache_dtype.add_to(cmd);
  cmd->add_option("--kl-divergence-base", o->base_file,
                  "Base log-probabilities file (llama.cpp's format): written by a perplexity run, read with --kl-divergence");
  cmd->add_flag("--kl-divergence", o->kl_divergence,
                "Compare the model with the --kl-divergence-base file's (its tokens and context): KLD, delta-p, same top token");
  cmd->add_flag("--forced-decode", o->forced_decode,
                "Score each window's second half token by token through the engine (its first half is the prompt, "
                "the rest fed one decode step at a time as forced tokens), so --kv-eviction acts as in a generation");
  cmd->add_option("--kv-eviction", o->eviction.eviction,
                  "With --forced-decode: sink:N,window:W (StreamingLLM), snapkv:budget=B[,window=W,kernel=K] or "
                  "h2o:budget=B[,recent=R], as lumen run takes it");
  cmd->add_option("--in-flight", o->in_flight, "With --forced-decode: windows decoded side by side")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o->json, "Print the results as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace lumen::cli
