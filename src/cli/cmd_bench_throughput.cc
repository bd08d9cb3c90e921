// `lumen bench throughput`: offline serving throughput, the way vLLM's and nano-vllm's
// throughput benchmarks measure it. N requests of random tokens, with input and output lengths
// drawn from a seeded uniform range around the given lengths (or fixed), all submitted at once
// with ignore_eos; the engine runs until every request is done. Reports requests/s, output and
// total tokens/s, KV cache usage and the prefix hit rate.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/device_option.h"
#include "benchmark/expert_load.h"
#include "benchmark/progress_bar.h"
#include "benchmark/request_lengths.h"
#include "benchmark/step_replay.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/engine_options.h"
#include "cli/model_parallel_flags.h"
#include "lumen/engine.h"
#include "lumen/model.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ThroughputOptions {
  std::string model;
  int64_t num_prompts = 32;
  int64_t input_len = 128;
  int64_t output_len = 128;
  double range_ratio = 0.0;  // lengths uniform in [len * (1 - r), len * (1 + r)]
  uint64_t seed = 0;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());  // all cores, as every command
  std::string device;
  ModelParallelFlags parallel;
  bool json = false;
  EngineFlags engine;
  // How every request samples (greedy by default); request i is seeded with seed + i.
  float temperature = 0.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;
  float min_p = 0.0f;
};

using Clock = std::chrono::steady_clock;

void run_throughput(const ThroughputOptions& options) {
  const std::string path = resolve_model_path(options.model);
  const Model model =
      Model::load(path, sized_for(options.parallel.applied_to({.device = options.device, .threads = options.threads}),
                                  options.engine.config));
  if (model.info().parallel_rank > 0) {
    follow_model_parallel_leader(model);
    return;
  }
  Engine engine(model, options.engine.resolve());
  const int64_t max_len = engine.stats().max_model_len;

  benchmark::RandomWorkload workload;
  workload.count = options.num_prompts;
  workload.input_len = options.input_len;
  workload.output_len = options.output_len;
  workload.range_ratio = options.range_ratio;
  workload.vocab_size = model.info().vocab_size;
  workload.seed = options.seed;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> output_lens;
  int64_t input_tokens = 0;
  for (benchmark::RandomTokenRequest& r : benchmark::random_token_requests(workload)) {
    const auto in = static_cast<int64_t>(r.prompt.size());
    if (in + r.output_len > max_len) {
      fail("input {} + output {} tokens exceed the context of {}", in, r.output_len, max_len);
    }
    prompts.push_back(std::move(r.prompt));
    output_lens.push_back(r.output_len);
    input_tokens += in;
  }

  benchmark::reset_expert_load(model);
  const bool progress = !options.json && isatty(fileno(stderr));
  std::vector<RequestHandle> handles;
  const auto start = Clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    SamplingParams params;
    params.temperature = options.temperature;
    params.top_p = options.top_p;
    params.top_k = options.top_k;
    params.min_p = options.min_p;
    params.seed = options.seed + i;
    params.max_tokens = output_lens[i];
    params.ignore_eos = true;
    handles.push_back(engine.add_request(prompts[i], params));
  }
  // Waste of the KV memory held by running sequences (block slots not yet holding a token),
  // averaged over steps; and the peak share of the pool in use.
  double waste_sum = 0;
  int64_t waste_steps = 0;
  int64_t peak_blocks = 0;
  int64_t finished = 0;
  auto last_draw = start;
  // Decode speed alone: the steps in which every token computed was a sampled one (no prompt
  // token, no draft), the phase whose cost grows with the KV cache read each step.
  double decode_seconds = 0;
  uint64_t decode_tokens = 0;
  EngineStats before = engine.stats();
  // Each step's device time (a device backend's events; none on the CPU) and how the steps ran.
  const backend::StepReplayStats replay_before = benchmark::step_replay_stats(model);
  const backend::StepDeviceTime device_before = benchmark::step_device_time(model);
  benchmark::time_device_steps(model, true);
  while (engine.has_unfinished()) {
    const auto step_start = Clock::now();
    engine.step();
    const auto step_end = Clock::now();
    const EngineStats s = engine.stats();
    const uint64_t generated = s.generated_tokens - before.generated_tokens;
    if (generated > 0 && s.computed_tokens - before.computed_tokens == generated) {
      decode_seconds += std::chrono::duration<double>(step_end - step_start).count();
      decode_tokens += generated;
    }
    before = s;
    if (s.kv_slots_allocated > 0) {
      waste_sum += 1.0 - static_cast<double>(s.kv_slots_filled) / static_cast<double>(s.kv_slots_allocated);
      ++waste_steps;
    }
    peak_blocks = std::max(peak_blocks, s.kv_blocks_used);
    if (progress && Clock::now() - last_draw > std::chrono::milliseconds(200)) {
      finished = options.num_prompts - s.running - s.waiting;
      benchmark::draw_progress_bar(finished, options.num_prompts, std::chrono::duration<double>(Clock::now() - start).count());
      last_draw = Clock::now();
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  benchmark::time_device_steps(model, false);
  const backend::StepDeviceTime device_after = benchmark::step_device_time(model);
  const uint64_t device_steps = device_after.steps - device_before.steps;
  if (progress) {
    benchmark::draw_progress_bar(options.num_prompts, options.num_prompts, seconds);
    benchmark::finish_progress_bar();
  }
  int64_t output_tokens = 0;
  // A request that failed is no measurement: the bench names the first error and fails, rather
  // than reporting a rate over the requests that did not fail.
  int64_t failed = 0;
  std::string first_error;
  StreamChunk chunk;
  for (RequestHandle& h : handles) {
    while (h.next(chunk)) {
      output_tokens += static_cast<int64_t>(chunk.tokens.size());
      if (chunk.finished && chunk.finish_reason == FinishReason::Error) {
        if (failed++ == 0) first_error = chunk.error;
      }
    }
  }
  if (failed > 0)
    fail("bench throughput: {} of {} requests failed; the first: {}", failed, options.num_prompts, first_error);
  const EngineStats s = engine.stats();
  const double hit_rate = s.prefix_queried_blocks == 0
                              ? 0.0
                              : static_cast<double>(s.prefix_hit_blocks) /
                                    static_cast<double>(s.prefix_queried_blocks);
  nlohmann::ordered_json result = {
      {"model", path},
      {"threads", options.threads},
      {"device", options.device},
      {"n_gpu_layers", model.info().n_gpu_layers},  // -1: the whole model on the device
      {"num_prompts", options.num_prompts},
      {"input_tokens", input_tokens},
      {"output_tokens", output_tokens},
      {"elapsed_s", seconds},
      {"requests_per_s", static_cast<double>(options.num_prompts) / seconds},
      {"output_tokens_per_s", static_cast<double>(output_tokens) / seconds},
      {"total_tokens_per_s", static_cast<double>(input_tokens + output_tokens) / seconds},
      {"decode_tokens_per_s", decode_seconds > 0 ? static_cast<double>(decode_tokens) / decode_seconds : 0.0},
      {"kv_cache_dtype", kv_cache_dtype_name(engine.config().kv_cache_dtype)},
      {"max_num_seqs", engine.config().max_num_seqs},
      {"max_num_batched_tokens", engine.config().max_num_batched_tokens},
      {"max_itl_ms", engine.config().max_itl_ms},  // 0: no step time target
      {"kv_cache_bytes", s.kv_cache_bytes},
      {"kv_blocks_total", s.kv_blocks_total},
      {"kv_peak_usage", static_cast<double>(peak_blocks) / static_cast<double>(s.kv_blocks_total)},
      {"kv_unused_in_allocated_blocks", waste_steps == 0 ? 0.0 : waste_sum / static_cast<double>(waste_steps)},
      {"prefix_hit_rate", hit_rate},
      {"preemptions", s.preemptions},
      {"steps", s.steps},
      // The engine's own work per step beside its forward passes (scheduling, sampling,
      // streaming): what a device waits through unless the next step is prepared meanwhile.
      {"forward_s", s.forward_seconds},
      {"host_ms_per_step",
       s.steps == 0 ? 0.0 : 1e3 * (s.step_seconds - s.forward_seconds) / static_cast<double>(s.steps)},
      {"forward_ms_per_step", s.steps == 0 ? 0.0 : 1e3 * s.forward_seconds / static_cast<double>(s.steps)},
      // A device's own time per step that waited for it (0 on the CPU): forward_ms_per_step
      // minus it is the host's part of the forward pass (enqueueing, uploads), in series.
      {"device_ms_per_step",
       device_steps == 0 ? 0.0
                         : 1e3 * (device_after.seconds - device_before.seconds) / static_cast<double>(device_steps)},
      {"device_timed_steps", device_steps},
      {"step_replay", benchmark::step_replay_json(replay_before, benchmark::step_replay_stats(model))},
      {"temperature", options.temperature},
      {"top_p", options.top_p},
      {"top_k", options.top_k},
      {"min_p", options.min_p},
      // Sampling rows that came back reduced, and of those brought back whole (EngineStats).
      {"argmax_rows", s.argmax_rows},
      {"leading_rows", s.leading_rows},
      {"rows_brought_back", s.rows_brought_back}};
  if (engine.config().speculative.method != SpeculativeMethod::None) result["spec_decode"] = speculation_json(s);
  const std::optional<benchmark::ExpertLoadCounts> load = benchmark::expert_load(model);
  if (load) result["expert_load"] = benchmark::expert_load_json(*load);
  if (options.json) {
    fmt::print("{}\n", result.dump(2));
    return;
  }
  fmt::print("requests: {}  input tokens: {}  output tokens: {}  time: {:.2f} s\n",
             options.num_prompts, input_tokens, output_tokens, seconds);
  fmt::print("throughput: {:.2f} requests/s, {:.1f} output tokens/s, {:.1f} total tokens/s\n",
             result["requests_per_s"].get<double>(), result["output_tokens_per_s"].get<double>(),
             result["total_tokens_per_s"].get<double>());
  fmt::print("decode steps alone: {:.1f} tokens/s\n", result["decode_tokens_per_s"].get<double>());
  fmt::print("per step: forward pass {:.2f} ms, the engine's own work {:.3f} ms\n",
             result["forward_ms_per_step"].get<double>(), result["host_ms_per_step"].get<double>());
  fmt::print("sampling rows reduced: {} to their argmax, {} to their leading candidates ({} brought back whole)\n",
             s.argmax_rows, s.leading_rows, s.rows_brought_back);
  fmt::print("KV cache ({}): {} blocks ({:.1f} MiB), peak use {:.1f}%, unused in allocated blocks {:.2f}%; "
             "prefix hit rate {:.1f}%; preemptions {}\n",
             kv_cache_dtype_name(engine.config().kv_cache_dtype), s.kv_blocks_total,
             static_cast<double>(s.kv_cache_bytes) / (1 << 20),
             100 * result["kv_peak_usage"].get<double>(),
             100 * result["kv_unused_in_allocated_blocks"].get<double>(), 100 * hit_rate,
             s.preemptions);
  if (result.contains("spec_decode")) fmt::print("{}\n", speculation_summary(s));
  if (load) fmt::print("{}", benchmark::expert_load_table(*load, fmt::format("{} requests", options.num_prompts)));
}

}  // namespace

void add_bench_throughput_command(CLI::App* bench) {
  auto options = std::make_shared<ThroughputOptions>();
  CLI::App* cmd = bench->add_subcommand(
      "throughput", "Offline throughput over many concurrent requests (like vLLM's)");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("--num-prompts", options->num_prompts, "Requests")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--input-len", options->input_len, "Prompt tokens per request")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--output-len", options->output_len, "Generated tokens per request")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--range-ratio", options->range_ratio,
                  "Lengths uniform in [len*(1-r), len*(1+r)]; 0: fixed")
      ->capture_default_str()->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--seed", options->seed, "Seed of the lengths, prompt tokens and draws (request i: seed + i)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", options->threads, "Threads (default: all cores)")->capture_default_str();
  cmd->add_option("--temperature", options->temperature, "Sampling temperature of every request (0: greedy)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", options->top_p, "Top-p of every request")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", options->top_k, "Top-k of every request (0: off)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-p", options->min_p, "Min-p of every request")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  add_device_option(cmd, options->device);
  add_model_parallel_options(cmd, options->parallel);
  cmd->add_flag("--json", options->json, "Print the result as JSON");
  options->engine.add_to(cmd);
  cmd->callback([options] { run_throughput(*options); });
}

}  // namespace lumen::cli
