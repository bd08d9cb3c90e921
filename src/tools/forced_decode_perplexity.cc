#include "tools/forced_decode_perplexity.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "engine/engine_test_access.h"
#include "lumen/engine.h"
#include "tools/log_prob_row.h"
#include "util/error.h"

namespace lumen::tools {

namespace {

// Added to the row's largest logit to make the forced token the greedy choice: finite (the
// engine fails a request whose logits are not) and far past any tie.
constexpr float kForcedLead = 1000.0f;

struct WindowScores {
  int64_t window = 0;
  int64_t scored = 0;  // forced tokens scored so far
};

EngineConfig forced_decode_config(const PerplexityOptions& options, const ForcedDecodeOptions& forced,
                                  int64_t in_flight) {
  EngineConfig config;
  config.max_model_len = options.n_ctx;
  config.max_num_seqs = in_flight;
  // Room for every window in flight at its full length: no window is ever preempted, so each
  // sampled row is scored exactly once.
  config.kv_cache_full_sequences = in_flight;
  config.max_num_batched_tokens = std::max<int64_t>(options.n_batch, in_flight);
  config.kv_cache_dtype = options.kv_cache_dtype;
  config.kv_cache_rotation = options.kv_cache_rotation;
  // The one-pass mode keeps every layer's every position (sliding-window layers too), and the
  // importance methods refuse layouts that drop out-of-window blocks.
  config.free_out_of_window_kv = false;
  // Windows of one text share no prompt a later window could reuse, and a compressed sequence's
  // blocks are never offered anyway.
  config.enable_prefix_caching = false;
  config.context_keep_tokens = forced.eviction.context_keep_tokens;
  config.kv_window_tokens = forced.eviction.kv_window_tokens;
  config.kv_importance = forced.eviction.kv_importance;
  return config;
}

}  // namespace

PerplexityResult compute_forced_decode_perplexity(const Model& model, std::span<const int32_t> tokens,
                                                  const PerplexityOptions& options, const ForcedDecodeOptions& forced,
                                                  const ProgressFn& progress) {
  const int64_t n_ctx = options.n_ctx;
  const int64_t n_windows = perplexity_window_count(model, tokens.size(), options);
  if (forced.in_flight < 1) fail("perplexity: at least one window must decode at a time");
  const int64_t in_flight = std::min(forced.in_flight, n_windows);
  const int64_t prompt_len = n_ctx / 2 + 1;  // positions 0 .. n_ctx/2: the last one predicts the first scored
  const int64_t rows = n_ctx - prompt_len;   // positions n_ctx/2 .. n_ctx-2, as the one-pass mode
  const auto vocab = static_cast<size_t>(model.info().vocab_size);
  const auto start = std::chrono::steady_clock::now();

  Engine engine(model, forced_decode_config(options, forced, in_flight));
  std::vector<double> nll(static_cast<size_t>(n_windows * rows));
  std::unordered_map<uint64_t, WindowScores> by_request;
  // The engine hands each request's sampling row here before it samples it (the test-access
  // hook: the one place a row can be read and changed before sampling without a sampler of
  // our own in the engine).
  EngineTestAccess::set_logits_hook(engine, [&](uint64_t request, std::span<float> logits) {
    const auto it = by_request.find(request);
    if (it == by_request.end()) return;
    WindowScores& w = it->second;
    if (logits.size() != vocab || w.scored >= rows) fail("perplexity: a window was asked for an unexpected row");
    const size_t next = static_cast<size_t>(w.window * n_ctx + prompt_len + w.scored);
    const int32_t token = tokens[next];
    const RowSummary summary = summarize_row(logits);
    nll[static_cast<size_t>(w.window * rows + w.scored)] = summary.nll(logits, token);
    logits[static_cast<size_t>(token)] = summary.max_logit + kForcedLead;
    ++w.scored;
  });

  SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = rows;
  params.ignore_eos = true;  // an end-of-text token inside the text is just another forced token
  const std::optional<int32_t> bos = window_bos(model);
  std::vector<RequestHandle> handles;
  for (int64_t w = 0; w < n_windows; ++w) {
    const auto first = tokens.begin() + w * n_ctx;
    std::vector<int32_t> prompt(first, first + prompt_len);
    if (bos) prompt.front() = *bos;
    handles.push_back(engine.add_request(std::move(prompt), params));
    by_request[handles.back().id()] = {w, 0};
  }

  PerplexityResult result;
  result.n_ctx = n_ctx;
  result.n_windows = n_windows;
  result.tokens_evaluated = n_windows * (n_ctx - 1);  // the prompt and every forced token but the last
  NllSums sums;
  int64_t reported = 0;
  const auto report_finished = [&] {
    // Windows in order, each once all its rows are scored, so the running value is the
    // one-pass mode's.
    while (reported < n_windows && by_request[handles[static_cast<size_t>(reported)].id()].scored == rows) {
      GenerationResult r = handles[static_cast<size_t>(reported)].collect();
      const auto expected =
          tokens.subspan(static_cast<size_t>(reported * n_ctx + prompt_len), static_cast<size_t>(rows));
      if (r.finish == FinishReason::Error) fail("perplexity: window {} failed: {}", reported, r.error);
      if (!std::equal(r.tokens.begin(), r.tokens.end(), expected.begin(), expected.end())) {
        fail("perplexity: window {} did not continue with its forced tokens", reported);
      }
      for (int64_t i = 0; i < rows; ++i) sums.add(nll[static_cast<size_t>(reported * rows + i)]);
      result.running_ppl.push_back(sums.perplexity().value);
      if (progress) progress({reported, n_windows, result.running_ppl.back()});
      ++reported;
    }
  };
  while (engine.has_unfinished()) {
    engine.step();
    report_finished();
  }
  report_finished();
  if (reported != n_windows) {
    const GenerationResult r = handles[static_cast<size_t>(reported)].collect();
    fail("perplexity: window {} ended before its last token{}{}", reported, r.error.empty() ? "" : ": ", r.error);
  }
  result.tokens_scored = sums.count;
  result.ppl = sums.perplexity();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace lumen::tools
