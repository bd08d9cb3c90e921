// `lumen bench latency`: prompt processing and generation speed, measured the way llama.cpp's
// llama-bench measures them so the two can be compared run for run: random tokens, one warm-up
// run, then the mean and standard deviation of tokens/s over the repetitions; tokenization and
// sampling are not timed.
#include <fmt/format.h>

#include <thread>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <fstream>
#include <optional>
#include <string>

#include "cli/bench_engine_generation.h"
#include "cli/device_option.h"
#include "cli/model_parallel_flags.h"
#include "cli/speculative_flag.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "benchmark/expert_load.h"
#include "benchmark/forward_latency.h"
#include "benchmark/step_replay.h"
#include "lumen/model.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct LatencyOptions {
  std::string model;
  std::vector<int64_t> n_prompt = {512};
  std::vector<int64_t> n_gen = {128};
  // Every command computes on all cores unless told otherwise.
  std::vector<unsigned> threads = {std::max(1u, std::thread::hardware_concurrency())};
  int repetitions = 5;
  bool json = false;
  std::string device;
  ModelParallelFlags parallel;
  // With a speculative config, each tg test also runs through the engine with and without it
  // (bench_engine_generation.h), after this file's text or random tokens.
  SpeculativeFlag speculative;
  std::string prompt_file;
};

struct Measurement {
  int64_t n_prompt, n_gen;
  unsigned threads;
  std::vector<double> ns;
};


// "llama 135M Q4_1": architecture, parameter count, the type holding most weight bytes.
std::string model_type(const ModelInfo& info) {
  const double p = static_cast<double>(info.parameters);
  const std::string size = p >= 1e9 ? fmt::format("{:.1f}B", p / 1e9) : fmt::format("{:.0f}M", p / 1e6);
  return fmt::format("{} {} {}", info.architecture, size, info.weight_type);
}

// The table's columns, as llama-bench's markdown output has them.
constexpr const char* kRowFormat = "| {:<24} | {:>10} | {:>9} | {:<7} | {:>7} | {:>6} | {:>20} |\n";

std::string params_text(uint64_t params) {
  const double p = static_cast<double>(params);
  return p >= 1e9 ? fmt::format("{:.2f} B", p / 1e9) : fmt::format("{:.2f} M", p / 1e6);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// The prompt the engine rows generate after: the file's text, or random tokens as long as the
// first pp test (512 without one).
std::vector<int32_t> engine_prompt(const Model& model, const LatencyOptions& options, std::mt19937& rng) {
  if (!options.prompt_file.empty()) {
    std::ifstream in(options.prompt_file, std::ios::binary);
    if (!in) fail("cannot read the prompt file '{}'", options.prompt_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<int32_t> tokens = model.tokenize(text, {.add_special = true, .parse_special = true});
    if (tokens.empty()) fail("the prompt file '{}' is empty", options.prompt_file);
    return tokens;
  }
  int64_t length = 512;
  for (int64_t n : options.n_prompt) {
    if (n > 0) {
      length = n;
      break;
    }
  }
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(model.info().vocab_size) - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(length));
  for (int32_t& t : tokens) t = token(rng);
  return tokens;
}

void run_latency(const LatencyOptions& options) {
  const SpeculativeConfig speculative = options.speculative.config();  // a bad config fails before loading
  const std::string path = resolve_model_path(options.model);
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  std::string expert_tables;  // MoE models: printed after the table
  bool header_printed = false;  // by rank 0 only, under tensor parallelism
  auto print_row = [&](const nlohmann::ordered_json& r, const std::string& test) {
    if (options.json) return;
    if (!header_printed) {
      fmt::print(kRowFormat, "model", "size", "params", "backend", "threads", "test", "t/s");
      fmt::print("| {:-<24} | {:->9}: | {:->8}: | {:-<7} | {:->6}: | {:->5}: | {:->19}: |\n", "", "", "", "", "", "",
                 "");
      header_printed = true;
    }
    fmt::print(kRowFormat, r["model_type"].get<std::string>(),
               fmt::format("{:.2f} MiB", static_cast<double>(r["model_size"].get<uint64_t>()) / (1 << 20)),
               params_text(r["model_n_params"].get<uint64_t>()), r["backends"].get<std::string>(),
               r["n_threads"].get<unsigned>(), test,
               fmt::format("{:.2f} ± {:.2f}", r["avg_ts"].get<double>(), r["stddev_ts"].get<double>()));
  };
  bool follower = false;  // a model-parallel rank other than 0: it reports nothing
  for (unsigned threads : options.threads) {
    const Model model = Model::load(path, options.parallel.applied_to({.device = options.device, .threads = threads}));
    if (model.info().parallel_rank > 0) {
      // This rank computes its share of rank 0's runs (the same for every thread count).
      follow_model_parallel_leader(model);
      follower = true;
      continue;
    }
    const uint64_t params = model.info().parameters;
    const uint64_t bytes = model.info().file_bytes;
    const std::string type = model_type(model.info());
    int64_t longest = 0;
    for (int64_t n : options.n_prompt) longest = std::max(longest, n);
    for (int64_t n : options.n_gen) longest = std::max(longest, n);
    // Gone before the engine rows below: a tensor-parallel model runs one of them at a time.
    auto forward = std::make_optional<benchmark::ForwardLatency>(model, longest);
    std::mt19937 rng(42);

    std::vector<std::pair<int64_t, int64_t>> tests;
    for (int64_t n : options.n_prompt) if (n > 0) tests.emplace_back(n, 0);
    for (int64_t n : options.n_gen) if (n > 0) tests.emplace_back(0, n);
    for (auto [n_prompt, n_gen] : tests) {
      forward->time_ns(n_prompt, n_gen, rng);  // warm-up
      benchmark::reset_expert_load(model);
      const backend::StepReplayStats replays_before = benchmark::step_replay_stats(model);
      std::vector<double> samples_ns, samples_ts;
      for (int r = 0; r < options.repetitions; ++r) {
        double ns = forward->time_ns(n_prompt, n_gen, rng);
        samples_ns.push_back(ns);
        samples_ts.push_back(1e9 * static_cast<double>(n_prompt + n_gen) / ns);
      }
      results.push_back({{"model_filename", path},
                         {"model_type", type},
                         {"model_size", bytes},
                         {"model_n_params", params},
                         {"backends", options.device == "cpu" ? "CPU" : "CUDA"},
                         {"n_threads", threads},
                         {"tensor_parallel_size", options.parallel.tensor},
                         {"pipeline_parallel_size", options.parallel.pipeline},
                         {"expert_parallel_size", options.parallel.expert},
                         {"n_prompt", n_prompt},
                         {"n_gen", n_gen},
                         {"avg_ns", static_cast<uint64_t>(mean(samples_ns))},
                         {"stddev_ns", static_cast<uint64_t>(stddev(samples_ns))},
                         {"avg_ts", mean(samples_ts)},
                         {"stddev_ts", stddev(samples_ts)},
                         {"samples_ns", samples_ns},
                         {"samples_ts", samples_ts}});
      if (options.device != "cpu") {
        // How the timed steps ran: replayed from CUDA graphs, recorded, or op by op.
        results.back()["step_graphs"] =
            benchmark::step_replay_json(replays_before, benchmark::step_replay_stats(model));
      }
      const std::string test = n_prompt > 0 ? fmt::format("pp{}", n_prompt) : fmt::format("tg{}", n_gen);
      if (const auto load = benchmark::expert_load(model)) {
        // The tokens of the timed repetitions (random tokens, so a router's natural balance).
        results.back()["expert_load"] = benchmark::expert_load_json(*load);
        expert_tables += benchmark::expert_load_table(
            *load, fmt::format("{}, {} threads, {} repetitions", test, threads, options.repetitions));
      }
      print_row(results.back(), test);
    }
    forward.reset();
    if (speculative.method != SpeculativeMethod::None) {
      const std::vector<int32_t> prompt = engine_prompt(model, options, rng);
      for (int64_t n_gen : options.n_gen) {
        if (n_gen <= 0) continue;
        for (const bool with : {false, true}) {
          const EngineGenerationTiming t = time_engine_generation(model, prompt, n_gen, options.repetitions,
                                                                  with ? speculative : SpeculativeConfig{});
          nlohmann::ordered_json row = {{"model_filename", path},
                                        {"model_type", type},
                                        {"model_size", bytes},
                                        {"model_n_params", params},
                                        {"backends", options.device == "cpu" ? "CPU" : "CUDA"},
                                        {"n_threads", threads},
                                        {"n_prompt", prompt.size()},
                                        {"n_gen", t.tokens},
                                        {"engine", true},
                                        {"speculative", with ? nlohmann::ordered_json::parse(options.speculative.json)
                                                             : nlohmann::ordered_json()},
                                        {"avg_ns", static_cast<uint64_t>(mean(t.ns))},
                                        {"stddev_ns", static_cast<uint64_t>(stddev(t.ns))},
                                        {"avg_ts", mean(t.ts)},
                                        {"stddev_ts", stddev(t.ts)},
                                        {"samples_ns", t.ns},
                                        {"samples_ts", t.ts}};
          if (with) row["spec_decode"] = speculation_json(t.stats);
          results.push_back(row);
          print_row(results.back(), fmt::format("tg{} engine{}", n_gen, with ? "+spec" : ""));
        }
      }
    }
  }
  if (follower) return;
  if (options.json) {
    fmt::print("{}\n", results.dump(2));
  } else {
    fmt::print("{}", expert_tables);
  }
}

}  // namespace

void add_bench_latency_command(CLI::App* bench) {
  auto options = std::make_shared<LatencyOptions>();
  CLI::App* cmd = bench->add_subcommand(
      "latency", "Prompt processing (pp) and generation (tg) speed, like llama-bench");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("-p,--n-prompt", options->n_prompt, "Prompt lengths")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", options->n_gen, "Generation lengths")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-t,--threads", options->threads, "Thread counts (default: all cores)")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-r,--repetitions", options->repetitions, "Repetitions")->capture_default_str();
  cmd->add_flag("--json", options->json, "Print llama-bench's JSON");
  options->speculative.add_to(cmd);
  cmd->add_option("--prompt-file", options->prompt_file,
                  "With --speculative-config: the prompt the engine rows generate after (default: random tokens, "
                  "as long as the first -p)");
  add_device_option(cmd, options->device);
  add_model_parallel_options(cmd, options->parallel);
  cmd->callback([options] { run_latency(*options); });
}

}  // namespace lumen::cli
