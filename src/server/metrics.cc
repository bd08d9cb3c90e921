#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/openai_responses.h"

namespace lumen::server {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value, uint64_t times) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  std::lock_guard lock(mutex_);
  buckets_[static_cast<size_t>(it - bounds_.begin())] += times;
  sum_ += value * static_cast<double>(times);
  count_ += times;
}

uint64_t Histogram::count() const {
  std::lock_guard lock(mutex_);
  return count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard lock(mutex_);
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += buckets_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

namespace {

std::vector<double> short_latency_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80};
}
std::vector<double> token_latency_buckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10, 20};
}
std::vector<double> request_latency_buckets() {
  return {0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960};
}

void gauge(std::string& out, const char* name, const char* help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
}

void counter(std::string& out, const char* name, const char* help, uint64_t value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, value);
}

}  // namespace

ServerMetrics::ServerMetrics()
    : queue_time(short_latency_buckets()),
      time_to_first_token(short_latency_buckets()),
      inter_token_latency(token_latency_buckets()),
      time_per_output_token(token_latency_buckets()),
      e2e_latency(request_latency_buckets()),
      kv_fetch_time(short_latency_buckets()) {}

void ServerMetrics::count_finished(FinishReason reason) { finished_[static_cast<size_t>(reason)] += 1; }

std::string ServerMetrics::render(const EngineStats& s, const PromptKvStats& kv) const {
  std::string out;
  gauge(out, "lumen_num_requests_running", "Requests the engine is running.", static_cast<double>(s.running));
  gauge(out, "lumen_num_requests_waiting", "Requests waiting for the engine to admit them.",
        static_cast<double>(s.waiting));
  gauge(out, "lumen_kv_cache_blocks_total", "KV cache blocks in the pool.", static_cast<double>(s.kv_blocks_total));
  gauge(out, "lumen_kv_cache_blocks_used", "KV cache blocks referenced by a request.",
        static_cast<double>(s.kv_blocks_used));
  gauge(out, "lumen_kv_cache_usage_ratio", "Share of KV cache blocks referenced by a request (0..1).",
        s.kv_blocks_total == 0 ? 0.0 : static_cast<double>(s.kv_blocks_used) / static_cast<double>(s.kv_blocks_total));
  gauge(out, "lumen_state_slots_total",
        "Recurrent-state slots of a state-space model: at most this many requests run at once (0: no such model).",
        static_cast<double>(s.state_slots_total));
  gauge(out, "lumen_state_cache_bytes", "Bytes of the state-space model's recurrent states (0: no such model).",
        static_cast<double>(s.state_cache_bytes));
  gauge(out, "lumen_prefix_cache_hit_rate", "Share of looked-up prompt blocks found in the prefix cache (0..1).",
        s.prefix_queried_blocks == 0 ? 0.0
                                     : static_cast<double>(s.prefix_hit_blocks) /
                                           static_cast<double>(s.prefix_queried_blocks));
  counter(out, "lumen_prefix_cache_queries_total", "Prompt blocks looked up in the prefix cache.",
          s.prefix_queried_blocks);
  counter(out, "lumen_prefix_cache_hits_total", "Prompt blocks found in the prefix cache.", s.prefix_hit_blocks);
  counter(out, "lumen_state_prefix_cache_queries_total",
          "Prompts of a state-space model looked up in the state prefix cache (its state snapshots).",
          s.state_prefix_queries);
  counter(out, "lumen_state_prefix_cache_hits_total", "Prompts that started from a cached state snapshot.",
          s.state_prefix_hits);
  counter(out, "lumen_state_prefix_cache_hit_tokens_total",
          "Prompt tokens skipped by starting from a cached state snapshot.", s.state_prefix_hit_tokens);
  gauge(out, "lumen_state_prefix_cache_bytes", "Bytes of the state prefix cache's snapshots (0: off).",
        static_cast<double>(s.state_snapshot_bytes));
  counter(out, "lumen_image_feature_cache_hits_total", "Images found already encoded in the visual-feature cache.",
          s.image_feature_cache_hits);
  counter(out, "lumen_image_feature_cache_misses_total", "Images the vision encoder encoded (not in the cache).",
          s.image_feature_cache_misses);
  counter(out, "lumen_num_preemptions_total", "Requests preempted for lack of KV blocks.", s.preemptions);
  if (!s.expert_pairs_per_rank.empty()) {
    out +=
        "# HELP lumen_expert_parallel_routed_pairs_total Routed token-expert pairs that went to each rank's "
        "experts (expert parallelism).\n# TYPE lumen_expert_parallel_routed_pairs_total counter\n";
    for (size_t r = 0; r < s.expert_pairs_per_rank.size(); ++r) {
      out += fmt::format("lumen_expert_parallel_routed_pairs_total{{rank=\"{}\"}} {}\n", r, s.expert_pairs_per_rank[r]);
    }
    counter(out, "lumen_expert_parallel_exchanged_bytes_total",
            "Bytes the expert-parallel all-to-alls moved between different ranks.", s.expert_exchanged_bytes);
  }
  if (!s.attention_rows_per_rank.empty()) {
    out +=
        "# HELP lumen_data_parallel_attention_rows_total Rows (tokens) of attention each rank ran "
        "(data-parallel attention).\n# TYPE lumen_data_parallel_attention_rows_total counter\n";
    for (size_t r = 0; r < s.attention_rows_per_rank.size(); ++r) {
      out +=
          fmt::format("lumen_data_parallel_attention_rows_total{{rank=\"{}\"}} {}\n", r, s.attention_rows_per_rank[r]);
    }
  }
  counter(out, "lumen_context_shifts_total", "Times a request dropped old positions to go on past its context.",
          s.context_shifts);
  counter(out, "lumen_kv_evictions_total",
          "Times a request evicted positions by importance (--kv-eviction snapkv or h2o, or its kv_eviction field).",
          s.kv_evictions);
  counter(out, "lumen_late_grammar_masks_total",
          "Tokens a constrained request sampled a step late because its grammar mask was slow (the others went on).",
          s.late_grammar_masks);
  // Speculative decoding (zero when it is off), named after vLLM's spec_decode counters.
  counter(out, "lumen_spec_decode_num_drafts_total", "Decode steps of a request that carried a speculative draft.",
          s.spec_drafts);
  counter(out, "lumen_spec_decode_num_draft_tokens_total", "Draft tokens scored by the model.", s.spec_draft_tokens);
  counter(out, "lumen_spec_decode_num_accepted_tokens_total", "Draft tokens the model accepted.",
          s.spec_accepted_tokens);
  counter(out, "lumen_spec_decode_num_branch_tokens_total",
          "Accepted draft tokens off a token tree's first branch (num_candidates > 1).", s.spec_branch_tokens);
  counter(out, "lumen_spec_decode_num_paused_steps_total",
          "Decode steps of a request that did not speculate because its drafts did not pay (below break-even).",
          s.spec_paused_steps);
  gauge(out, "lumen_spec_decode_acceptance_rate", "Accepted share of the draft tokens scored so far (0..1).",
        s.spec_draft_tokens == 0 ? 0.0
                                 : static_cast<double>(s.spec_accepted_tokens) / static_cast<double>(s.spec_draft_tokens));
  counter(out, "lumen_prompt_tokens_total", "Prompt tokens of requests handed to the engine.", prompt_tokens_.load());
  counter(out, "lumen_generation_tokens_total", "Tokens generated for clients.", generated_tokens_.load());
  counter(out, "lumen_embedding_requests_total", "/v1/embeddings requests answered.", embedding_requests_.load());
  counter(out, "lumen_embedding_inputs_total", "Inputs (vectors) of answered /v1/embeddings requests.",
          embedding_inputs_.load());
  counter(out, "lumen_embedding_tokens_total", "Tokens of answered /v1/embeddings requests' inputs.",
          embedding_tokens_.load());
  counter(out, "lumen_requests_rejected_total", "Requests refused because the queue was full or the server was stopping.",
          rejected_.load());
  out += "# HELP lumen_request_success_total Finished requests (one per choice) by finish reason.\n"
         "# TYPE lumen_request_success_total counter\n";
  for (FinishReason r : {FinishReason::Stop, FinishReason::Length, FinishReason::Abort, FinishReason::Error}) {
    out += fmt::format("lumen_request_success_total{{finished_reason=\"{}\"}} {}\n", finish_reason_name(r),
                       finished_[static_cast<size_t>(r)].load());
  }
  queue_time.render(out, "lumen_request_queue_time_seconds",
                    "Seconds from arrival until the request was handed to the engine (parsing, "
                    "tokenization, admission; the engine does not report when it schedules a request).");
  time_to_first_token.render(out, "lumen_time_to_first_token_seconds", "Seconds from arrival to the first output token.");
  inter_token_latency.render(out, "lumen_inter_token_latency_seconds", "Seconds between successive output tokens.");
  time_per_output_token.render(out, "lumen_time_per_output_token_seconds",
                               "Per request: seconds per output token after the first.");
  e2e_latency.render(out, "lumen_e2e_request_latency_seconds", "Seconds from arrival to the last output token.");
  // Disaggregated prefill and decode (zero in an instance of neither role).
  counter(out, "lumen_kv_transfer_prompts_kept_total",
          "Prefill role: prompts whose K/V was kept for a decode instance.", kv.stored);
  counter(out, "lumen_kv_transfer_prompts_taken_total", "Prefill role: kept prompts' K/V fetched by a decode instance.",
          kv.taken);
  counter(out, "lumen_kv_transfer_prompts_evicted_total",
          "Prefill role: kept prompts' K/V dropped for room before a decode instance fetched it.", kv.evicted);
  counter(out, "lumen_kv_transfer_imported_tokens_total",
          "Decode role: prompt positions whose K/V came from a prefill instance into the prefix cache.",
          kv.imported_tokens);
  out += "# HELP lumen_kv_transfer_fetches_total Decode role: fetches of a prompt's K/V from a prefill instance, by "
         "outcome (missing: it held none; failed: the prompt was computed here).\n"
         "# TYPE lumen_kv_transfer_fetches_total counter\n";
  constexpr std::array<const char*, 3> kOutcomes{"imported", "missing", "failed"};
  for (size_t i = 0; i < kOutcomes.size(); ++i) {
    out += fmt::format("lumen_kv_transfer_fetches_total{{outcome=\"{}\"}} {}\n", kOutcomes[i], kv_fetches_[i].load());
  }
  kv_fetch_time.render(out, "lumen_kv_transfer_fetch_seconds",
                       "Decode role: seconds to fetch a prompt's K/V from a prefill instance and queue its import.");
  return out;
}

}  // namespace lumen::server
