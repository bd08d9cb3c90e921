#pragma once
// The flags that size and schedule the serving engine, shared by every command that runs one
// (bench throughput, serve; run takes the context-shift and speculative ones: it serves one
// prompt, so ITL-aware scheduling has nothing to trade there).
#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

#include "cli/context_shift_flags.h"
#include "cli/kv_cache_dtype_flag.h"
#include "cli/speculative_flag.h"
#include "lumen/engine_config.h"
#include "util/error.h"

namespace lumen::cli {

struct EngineFlags {
  EngineConfig config;
  std::string kv_cache_memory;  // "2G", "512M", "1048576"
  bool no_prefix_caching = false;
  bool keep_out_of_window_kv = false;
  std::string policy = "fcfs";
  std::string preemption = "recompute";
  std::string swap_space;  // "1G"
  std::string state_prefix_cache;  // "256M"; empty: off
  ContextShiftFlags context_shift;
  SpeculativeFlag speculative;
  KvCacheDtypeFlag kv_cache_dtype;
  int64_t image_feature_cache_mb = 64;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--max-num-seqs", config.max_num_seqs, "Sequences running at once")
        ->capture_default_str()->check(CLI::PositiveNumber);
    cmd->add_option("--max-num-batched-tokens", config.max_num_batched_tokens,
                    "Tokens per engine step (decodes + prefill chunks)")
        ->capture_default_str()->check(CLI::PositiveNumber);
    cmd->add_option("--block-size", config.block_size, "Tokens per KV block")
        ->capture_default_str()->check(CLI::Range(1, 1024));
    cmd->add_option("--kv-cache-memory", kv_cache_memory,
                    "KV cache size, e.g. 2G or 512M (default: a share of free RAM)");
    cmd->add_option("--kv-cache-ram-fraction", config.kv_cache_ram_fraction,
                    "Share of available RAM for the KV cache when --kv-cache-memory is not given")
        ->capture_default_str();
    cmd->add_option("--gpu-memory-utilization", config.gpu_memory_utilization,
                    "On a GPU: share of the device memory free after the weights and the largest step "
                    "(max-num-batched-tokens) for the KV cache")
        ->capture_default_str();
    cmd->add_option("--max-model-len", config.max_model_len,
                    "Longest sequence, prompt and output (default: the model's context)");
    cmd->add_flag("--no-prefix-caching", no_prefix_caching, "Do not reuse cached prompt prefixes");
    cmd->add_flag("--keep-out-of-window-kv", keep_out_of_window_kv,
                  "Sliding-window layers keep every position's K/V (default: only their window's)");
    cmd->add_option("--scheduling-policy", policy, "fcfs or priority")
        ->check(CLI::IsMember({"fcfs", "priority"}))->capture_default_str();
    cmd->add_option("--preemption-mode", preemption,
                    "recompute (drop a preempted sequence's K/V) or swap (copy it to host memory)")
        ->check(CLI::IsMember({"recompute", "swap"}))->capture_default_str();
    cmd->add_option("--swap-space", swap_space, "Host memory for swapped blocks, e.g. 1G");
    cmd->add_option("--state-prefix-cache-memory", state_prefix_cache,
                    "State-space models: memory for snapshots of prompts' recurrent states at block boundaries, "
                    "reused by prompts with the same prefix, out of the KV cache memory, e.g. 256M (default: off)");
    kv_cache_dtype.add_to(cmd);
    cmd->add_option("--max-itl-ms", config.max_itl_ms,
                    "ITL-aware scheduling: keep each step with decoding streams under this many ms "
                    "(prefill chunks shrink to fit, from measured step times; default off)")
        ->check(CLI::Validator(check_max_itl_ms, "MS > 0", "max-itl-ms"));
    context_shift.add_to(cmd);
    speculative.add_to(cmd);
    cmd->add_option("--image-feature-cache-mb", image_feature_cache_mb,
                    "Encoded images kept by content hash for later requests (MiB of features; 0: none)")
        ->capture_default_str()
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  }

  // A positive, finite number of milliseconds, at most a minute (a larger target bounds
  // nothing a step ever takes: leave the flag out instead). Returns the error, empty when good.
  static std::string check_max_itl_ms(std::string& text) {
    size_t used = 0;
    double ms = 0;
    try {
      ms = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(ms)) {
      return "'" + text + "' is not a number of milliseconds (e.g. 40)";
    }
    if (!(ms > 0) || ms > 60000) return "'" + text + "' is out of range: a step time target in (0, 60000] ms";
    return "";
  }

  // Call after parsing.
  EngineConfig resolve() const {
    EngineConfig c = config;
    c.enable_prefix_caching = !no_prefix_caching;
    c.kv_cache_dtype = kv_cache_dtype.value();
    c.kv_cache_rotation = kv_cache_dtype.rotation();
    c.free_out_of_window_kv = !keep_out_of_window_kv;
    context_shift.apply(c);
    c.speculative = speculative.config();
    c.jump_forward = !speculative.no_jump_forward;
    c.policy = policy == "priority" ? SchedulingPolicy::Priority : SchedulingPolicy::Fcfs;
    c.preemption_mode = preemption == "swap" ? PreemptionMode::Swap : PreemptionMode::Recompute;
    if (!kv_cache_memory.empty()) c.kv_cache_bytes = parse_bytes(kv_cache_memory, "--kv-cache-memory");
    if (!swap_space.empty()) c.swap_space_bytes = parse_bytes(swap_space, "--swap-space");
    if (!state_prefix_cache.empty()) {
      c.state_prefix_cache_bytes = parse_bytes(state_prefix_cache, "--state-prefix-cache-memory");
    }
    c.image_feature_cache_bytes = image_feature_cache_mb << 20;
    return c;
  }

  static int64_t parse_bytes(const std::string& text, const char* flag) {
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      fail("{}: '{}' is not a size (e.g. 2G, 512M)", flag, text);
    }
    const std::string unit = text.substr(used);
    double scale = 1;
    if (unit == "K" || unit == "k" || unit == "KiB") scale = 1024.0;
    else if (unit == "M" || unit == "MiB") scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "GiB") scale = 1024.0 * 1024 * 1024;
    else if (!unit.empty()) fail("{}: unknown unit '{}' (K, M, G)", flag, unit);
    if (!(value > 0) || value * scale > 9e18) fail("{}: '{}' is out of range", flag, text);
    return static_cast<int64_t>(value * scale);
  }
};

}  // namespace lumen::cli
