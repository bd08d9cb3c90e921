// Prometheus text: cumulative buckets, sums and counts, and the gauges read from the engine.
#include <gtest/gtest.h>

#include "server/metrics.h"

namespace lumen::server {
namespace {

TEST(Histogram, BucketsAreCumulativeAndInfCountsAll) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5, 2);
  h.observe(7.0);
  std::string out;
  h.render(out, "x", "help");
  EXPECT_NE(out.find("# TYPE x histogram\n"), std::string::npos);
  EXPECT_NE(out.find("x_bucket{le=\"0.1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_sum 8.05\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_count 4\n"), std::string::npos) << out;
  EXPECT_EQ(h.count(), 4u);
}

TEST(ServerMetrics, RendersEngineGaugesAndCounters) {
  ServerMetrics m;
  m.add_prompt_tokens(10);
  m.add_generated_tokens(4);
  m.count_finished(FinishReason::Stop);
  m.count_finished(FinishReason::Abort);
  m.count_finished(FinishReason::Abort);
  EngineStats s;
  s.running = 2;
  s.waiting = 5;
  s.kv_blocks_total = 100;
  s.kv_blocks_used = 25;
  s.prefix_queried_blocks = 8;
  s.prefix_hit_blocks = 2;
  s.state_slots_total = 7;
  s.state_cache_bytes = 1024;
  s.state_prefix_queries = 6;
  s.state_prefix_hits = 3;
  s.state_prefix_hit_tokens = 96;
  s.state_snapshot_bytes = 4096;
  const std::string out = m.render(s);
  for (const char* line : {"lumen_num_requests_running 2\n",
                           "lumen_num_requests_waiting 5\n",
                           "lumen_kv_cache_usage_ratio 0.25\n",
                           "lumen_prefix_cache_hit_rate 0.25\n",
                           "lumen_state_slots_total 7\n",
                           "lumen_state_cache_bytes 1024\n",
                           "lumen_state_prefix_cache_queries_total 6\n",
                           "lumen_state_prefix_cache_hits_total 3\n",
                           "lumen_state_prefix_cache_hit_tokens_total 96\n",
                           "lumen_state_prefix_cache_bytes 4096\n",
                           "lumen_prompt_tokens_total 10\n",
                           "lumen_generation_tokens_total 4\n",
                           "lumen_request_success_total{finished_reason=\"stop\"} 1\n",
                           "lumen_request_success_total{finished_reason=\"length\"} 0\n",
                           "lumen_request_success_total{finished_reason=\"abort\"} 2\n",
                           "# TYPE lumen_time_to_first_token_seconds histogram\n",
                           "# TYPE lumen_inter_token_latency_seconds histogram\n",
                           "# TYPE lumen_time_per_output_token_seconds histogram\n",
                           "# TYPE lumen_e2e_request_latency_seconds histogram\n",
                           "# TYPE lumen_request_queue_time_seconds histogram\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line;
  }
  // An instance of neither disaggregation role reports zeros.
  EXPECT_NE(out.find("lumen_kv_transfer_prompts_kept_total 0\n"), std::string::npos) << out;
}

TEST(ServerMetrics, RendersPromptKvExchangeCounters) {
  ServerMetrics m;
  PromptKvStats kv;
  kv.stored = 7;
  kv.taken = 5;
  kv.evicted = 1;
  kv.imported_tokens = 96;
  const std::string out = m.render(EngineStats{}, kv);
  for (const char* line :
       {"lumen_kv_transfer_prompts_kept_total 7\n", "lumen_kv_transfer_prompts_taken_total 5\n",
        "lumen_kv_transfer_prompts_evicted_total 1\n", "lumen_kv_transfer_imported_tokens_total 96\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line;
  }
}

TEST(ServerMetrics, CountsEmbeddingRequestsInputsAndTokensApartFromPrompts) {
  ServerMetrics m;
  m.count_embeddings(3, 40);
  m.count_embeddings(1, 7);
  const std::string out = m.render(EngineStats{});
  for (const char* line :
       {"# TYPE lumen_embedding_requests_total counter\n", "lumen_embedding_requests_total 2\n",
        "lumen_embedding_inputs_total 4\n", "lumen_embedding_tokens_total 47\n", "lumen_prompt_tokens_total 0\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << out;
  }
}

}  // namespace
}  // namespace lumen::server
