// `lumen bench serve`: a load generator for any OpenAI-compatible server (lumen serve,
// llama-server, vLLM...), measured the way vLLM's serving benchmark measures: N streaming
// requests sent by Poisson arrivals (--request-rate) and/or with at most C in flight
// (--max-concurrency), of random token ids with seeded lengths or prompts from a file, with
// ignore_eos so every request generates its full length. Reports TTFT, TPOT, ITL and end-to-end
// latency (mean, p50, p90, p99), request and token throughput, and goodput under SLOs.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "benchmark/arrival_schedule.h"
#include "benchmark/bench_prompt.h"
#include "benchmark/goodput.h"
#include "benchmark/load_runner.h"
#include "benchmark/request_lengths.h"
#include "benchmark/serve_report.h"
#include "benchmark/server_target.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "lumen/model.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ServeBenchOptions {
  std::string base_url;
  std::string endpoint = "/v1/completions";
  std::string model;
  std::string label;
  int64_t num_prompts = 64;
  double request_rate = std::numeric_limits<double>::infinity();
  int64_t max_concurrency = 0;
  int64_t input_len = 128;
  int64_t output_len = 128;
  double range_ratio = 0.0;
  uint64_t seed = 0;
  int64_t vocab_size = 0;
  std::string vocab_model;
  std::string prompts_file;
  bool ignore_eos = true;
  double temperature = 0.0;
  std::string extra_body;
  std::string api_key;
  std::vector<std::string> goodput;
  double timeout_s = 600;
  bool json = false;
  std::string output;
  bool per_request = false;
};

int64_t vocabulary_size(const ServeBenchOptions& o) {
  if (o.vocab_size > 0) return o.vocab_size;
  const std::string path = resolve_model_path(o.vocab_model);
  const int64_t n = Model::load(path, {.vocab_only = true}).info().vocab_size;
  if (n <= 0) fail("{} has no vocabulary size; give --vocab-size", path);
  return n;
}

// The prompts to send: from the file (cycled to num_prompts), else random token ids.
std::vector<benchmark::BenchPrompt> make_prompts(const ServeBenchOptions& o) {
  std::vector<benchmark::BenchPrompt> prompts;
  if (!o.prompts_file.empty()) {
    const std::vector<benchmark::BenchPrompt> given = benchmark::load_prompt_file(o.prompts_file);
    std::mt19937_64 rng(o.seed);
    for (int64_t i = 0; i < o.num_prompts; ++i) {
      benchmark::BenchPrompt p = given[static_cast<size_t>(i) % given.size()];
      if (p.max_tokens == 0) p.max_tokens = benchmark::draw_length(o.output_len, o.range_ratio, rng);
      prompts.push_back(std::move(p));
    }
    return prompts;
  }
  benchmark::RandomWorkload workload;
  workload.count = o.num_prompts;
  workload.input_len = o.input_len;
  workload.output_len = o.output_len;
  workload.range_ratio = o.range_ratio;
  workload.vocab_size = vocabulary_size(o);
  workload.seed = o.seed;
  for (benchmark::RandomTokenRequest& r : benchmark::random_token_requests(workload)) {
    prompts.push_back({std::move(r.prompt), r.output_len});
  }
  return prompts;
}

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  return text;
}

void run_bench_serve(const ServeBenchOptions& o) {
  const benchmark::ServiceLevelObjectives slos = benchmark::parse_slos(o.goodput);
  benchmark::LoadOptions load;
  load.target = benchmark::parse_server_target(o.base_url, o.endpoint);
  load.max_concurrency = o.max_concurrency;
  load.timeout_s = o.timeout_s;
  load.progress = isatty(fileno(stderr)) != 0;
  load.headers = {{"Content-Type", "application/json"}};
  std::string key = o.api_key;
  if (key.empty()) {
    if (const char* env = std::getenv("OPENAI_API_KEY"); env != nullptr) key = env;
  }
  if (!key.empty()) load.headers.emplace("Authorization", "Bearer " + key);

  benchmark::BodyOptions body;
  body.model = o.model;
  body.chat = o.endpoint.find("chat/completions") != std::string::npos;
  body.ignore_eos = o.ignore_eos;
  body.temperature = o.temperature;
  if (!o.extra_body.empty()) {
    body.extra = nlohmann::json::parse(o.extra_body, nullptr, false);
    if (!body.extra.is_object()) fail("--extra-body must be a JSON object");
  }

  const std::vector<benchmark::BenchPrompt> prompts = make_prompts(o);
  std::vector<std::string> bodies;
  std::vector<int64_t> known_prompt_tokens;
  for (const benchmark::BenchPrompt& p : prompts) {
    bodies.push_back(benchmark::request_body(p, body));
    known_prompt_tokens.push_back(p.prompt_tokens());
  }
  // The arrivals draw from their own stream (seed + 1) so changing the rate keeps the prompts.
  const std::vector<double> arrivals = benchmark::poisson_arrivals(bodies.size(), o.request_rate, o.seed + 1);

  nlohmann::ordered_json config = {
      {"label", o.label},
      {"base_url", o.base_url},
      {"endpoint", o.endpoint},
      {"model", o.model},
      {"num_prompts", o.num_prompts},
      {"request_rate",
       std::isinf(o.request_rate) ? nlohmann::ordered_json("inf") : nlohmann::ordered_json(o.request_rate)},
      {"max_concurrency", o.max_concurrency > 0 ? nlohmann::ordered_json(o.max_concurrency) : nlohmann::ordered_json()},
      {"prompts", o.prompts_file.empty() ? "random" : o.prompts_file},
      {"input_len", o.prompts_file.empty() ? nlohmann::ordered_json(o.input_len) : nlohmann::ordered_json()},
      {"output_len", o.output_len},
      {"range_ratio", o.range_ratio},
      {"seed", o.seed},
      {"ignore_eos", o.ignore_eos},
      {"temperature", o.temperature},
      {"date", local_time_now()}};
  if (!o.json) {
    fmt::print(
        stderr, "bench serve: {} requests to {}{} ({}, {})\n", bodies.size(), load.target.scheme_host_port,
        load.target.path,
        std::isinf(o.request_rate) ? std::string("all at once") : fmt::format("{} req/s Poisson", o.request_rate),
        o.max_concurrency > 0 ? fmt::format("at most {} in flight", o.max_concurrency)
                              : std::string("no concurrency cap"));
  }
  const benchmark::LoadRun run = benchmark::run_load(load, bodies, arrivals);
  const nlohmann::ordered_json report =
      benchmark::serve_report(run, known_prompt_tokens, slos, std::move(config), o.per_request);
  if (!o.json) {
    fmt::print("{}", benchmark::format_serve_report(report));
  } else if (o.output.empty()) {
    fmt::print("{}", report.dump(2) + "\n");
  } else {
    std::ofstream out(o.output);
    if (!(out << report.dump(2) << "\n") || !out.flush()) fail("cannot write {}", o.output);
    fmt::print(stderr, "bench serve: {} completed, {} failed; wrote {}\n", report["completed"].get<int64_t>(),
               report["failed"].get<int64_t>(), o.output);
  }
  // The report is written either way; a run where nothing got through is still a failure.
  if (report["completed"].get<int64_t>() == 0 && !bodies.empty()) {
    const auto& errors = report["errors"];
    fail("every request failed ({})",
         errors.empty() ? std::string("see the report") : errors.front()["message"].get<std::string>());
  }
}

}  // namespace

void add_bench_serve_command(CLI::App* bench) {
  auto o = std::make_shared<ServeBenchOptions>();
  CLI::App* cmd = bench->add_subcommand(
      "serve", "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, latency, throughput, goodput (like vLLM's)");
  cmd->add_option("--base-url", o->base_url, "Server, e.g. http://127.0.0.1:8080 (an SDK-style base URL ending in /v1 works too)")
      ->required();
  cmd->add_option("--endpoint", o->endpoint, "/v1/completions or /v1/chat/completions (text prompts)")
      ->capture_default_str();
  cmd->add_option("--model", o->model, "Model name sent in requests (default: none; one-model servers accept that)");
  cmd->add_option("--label", o->label, "Name of the server in the result (for plots)");
  cmd->add_option("--num-prompts", o->num_prompts, "Requests")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--request-rate", o->request_rate, "Requests per second, Poisson arrivals (default: all at once)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-concurrency", o->max_concurrency, "Requests in flight at most (default: no limit)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--input-len", o->input_len, "Random prompt tokens per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--output-len", o->output_len, "Tokens to generate per request (max_tokens)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--range-ratio", o->range_ratio, "Lengths uniform in [len*(1-r), len*(1+r)]; 0: fixed")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--seed", o->seed, "Seed of the prompts, lengths and arrivals")->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "Random token ids in [0, N) (default: the vocabulary of --vocab-from)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--vocab-from", o->vocab_model,
                  "GGUF whose vocabulary size bounds random token ids (default: the default model)");
  cmd->add_option(
      "--prompts-file", o->prompts_file,
      "JSON Lines of prompts (a string, token ids, or {\"prompt\": ..., \"max_tokens\": N}) instead of random ones");
  cmd->add_flag("--ignore-eos,!--no-ignore-eos", o->ignore_eos,
                "Generate max_tokens whatever the model says (default: on)");
  cmd->add_option("--temperature", o->temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--extra-body", o->extra_body, "JSON object merged into every request body");
  cmd->add_option("--api-key", o->api_key, "Bearer key (or set OPENAI_API_KEY)");
  cmd->add_option("--goodput", o->goodput, "SLOs in ms, e.g. ttft:500 tpot:50 e2el:10000");
  cmd->add_option("--timeout", o->timeout_s, "Seconds a response may stay silent")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o->json,
                "Write the result as JSON (to stdout, or --output): vLLM's flat keys (mean_ttft_ms, median_ttft_ms, "
                "p99_ttft_ms, ...) and a summary object per metric (ttft_ms: count, mean, std, min, p50, p90, p99, max)");
  cmd->add_option("--output", o->output, "With --json: the file to write");
  cmd->add_flag("--per-request", o->per_request, "With --json: add each request's TTFT, TPOT, latency and tokens");
  cmd->callback([o] { run_bench_serve(*o); });
}

}  // namespace lumen::cli
