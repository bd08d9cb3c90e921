#pragma once
// Prometheus metrics (text exposition format 0.0.4): latency histograms observed by the routes,
// token and request counters, and gauges read from the engine when /metrics is scraped.
// Thread-safe: every HTTP thread records into the same ServerMetrics.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "lumen/engine.h"
#include "lumen/prompt_kv_exchange.h"

namespace lumen::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value, uint64_t times = 1);
  // Appends `name`_bucket{le=...}, _sum and _count lines.
  void render(std::string& out, const std::string& name, const std::string& help) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> buckets_;  // per bound, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// How a decode instance's fetch of a prompt's K/V went (`--role decode`, server/kv_handoff.h).
enum class KvFetchOutcome { Imported, Missing, Failed };

class ServerMetrics {
 public:
  ServerMetrics();

  // Seconds from arrival at the server until the request was handed to the engine.
  Histogram queue_time;
  Histogram time_to_first_token;
  Histogram inter_token_latency;  // per output token after the first
  Histogram time_per_output_token;  // per request: (e2e - ttft) / (tokens - 1)
  Histogram e2e_latency;
  Histogram kv_fetch_time;  // decode role: seconds to learn the cached prefix, fetch and queue the import

  void add_prompt_tokens(int64_t n) { prompt_tokens_ += static_cast<uint64_t>(n); }
  void add_generated_tokens(int64_t n) { generated_tokens_ += static_cast<uint64_t>(n); }
  void count_finished(FinishReason reason);
  void count_rejected() { rejected_ += 1; }  // 429/503 for a full queue or shutdown
  void count_kv_fetch(KvFetchOutcome outcome) { kv_fetches_[static_cast<size_t>(outcome)] += 1; }
  // A /v1/embeddings request answered: its inputs and their tokens (counted apart from
  // generation's prompt tokens, whose rate means something else).
  void count_embeddings(int64_t inputs, int64_t tokens) {
    embedding_requests_ += 1;
    embedding_inputs_ += static_cast<uint64_t>(inputs);
    embedding_tokens_ += static_cast<uint64_t>(tokens);
  }

  // `kv`: the disaggregated prefill and decode counters (zero in an instance of neither role).
  std::string render(const EngineStats& stats, const PromptKvStats& kv = {}) const;

 private:
  std::atomic<uint64_t> prompt_tokens_{0};
  std::atomic<uint64_t> generated_tokens_{0};
  std::array<std::atomic<uint64_t>, 4> finished_{};  // by FinishReason
  std::atomic<uint64_t> rejected_{0};
  std::array<std::atomic<uint64_t>, 3> kv_fetches_{};  // by KvFetchOutcome
  std::atomic<uint64_t> embedding_requests_{0};
  std::atomic<uint64_t> embedding_inputs_{0};
  std::atomic<uint64_t> embedding_tokens_{0};
};

}  // namespace lumen::server
