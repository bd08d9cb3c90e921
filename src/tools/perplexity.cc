#include "tools/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "engine/model_state.h"
#include "tools/log_prob_row.h"
#include "tools/logits_file.h"
#include "tools/window_evaluator.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace lumen::tools {

namespace {

using Clock = std::chrono::steady_clock;

const tokenizer::SpecialTokens& special_tokens(const Model& model) {
  return engine::model_state(model).model->tokenizer.vocab().special;
}

void check_context(const Model& model, int64_t n_ctx, int64_t n_batch) {
  if (n_ctx < 4) fail("-c must be at least 4 (half of each window is context, half is scored)");
  if (n_ctx > model.info().context_length) {
    fail("-c {} is larger than the model's context of {} tokens", n_ctx, model.info().context_length);
  }
  if (n_batch < 1) fail("-b must be at least 1");
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Per-row work of one window, spread over the pool; each row's result lands in its own slot,
// and the slots are added up in order afterwards, so the result does not depend on timing.
template <typename RowFn>
void for_each_row(ThreadPool& pool, int64_t rows, RowFn&& fn) {
  pool.parallel_for(rows, [&](int64_t row, unsigned) { fn(row); });
}

}  // namespace

std::optional<int32_t> window_bos(const Model& model) {
  const auto& special = special_tokens(model);
  return special.add_bos ? special.bos : std::nullopt;
}

int64_t perplexity_window_count(const Model& model, size_t n_tokens, const PerplexityOptions& options) {
  check_context(model, options.n_ctx, options.n_batch);
  const int64_t available = static_cast<int64_t>(n_tokens) / options.n_ctx;
  if (available < 2) {
    fail("the text has {} tokens; -c {} needs at least {} (two windows, as llama-perplexity)", n_tokens, options.n_ctx,
         2 * options.n_ctx);
  }
  const int64_t n_windows = options.max_chunks < 0 ? available : std::min(options.max_chunks, available);
  if (n_windows < 1) fail("--chunks must be at least 1");
  return n_windows;
}

std::vector<int32_t> perplexity_tokens(const Model& model, std::string_view text) {
  if (special_tokens(model).add_eos) {
    fail("this model's vocabulary appends EOS to every text, which perplexity windows cannot hold");
  }
  return model.tokenize(text, {.add_special = true, .parse_special = false});
}

PerplexityResult compute_perplexity(const Model& model, std::span<const int32_t> tokens,
                                    const PerplexityOptions& options, const ProgressFn& progress) {
  const int64_t n_ctx = options.n_ctx;
  const int64_t n_windows = perplexity_window_count(model, tokens.size(), options);
  const auto evaluated = tokens.first(static_cast<size_t>(n_windows * n_ctx));

  const auto start = Clock::now();
  WindowEvaluator evaluator(model, n_ctx, options.n_batch, options.kv_cache_dtype,
                            options.kv_cache_rotation);
  ThreadPool pool(options.threads);
  const int64_t rows = evaluator.rows_per_window();
  const int64_t vocab = model.info().vocab_size;
  const int64_t entries = encoded_row_entries(vocab);
  std::unique_ptr<LogitsFileWriter> base;
  if (!options.write_base.empty()) {
    base = std::make_unique<LogitsFileWriter>(options.write_base, LogitsFileHeader{n_ctx, vocab, n_windows}, evaluated);
  }
  std::vector<double> nll(static_cast<size_t>(rows));
  std::vector<uint16_t> encoded(base ? static_cast<size_t>(rows * entries) : 0);
  NllSums sums;
  PerplexityResult result;
  result.n_ctx = n_ctx;
  result.n_windows = n_windows;
  result.tokens_evaluated = n_windows * n_ctx;

  evaluator.evaluate(evaluated, window_bos(model), [&](int64_t window, std::span<const float> logits) {
    // Row r is position n_ctx/2 + r, which predicts the token after it.
    const size_t next0 = static_cast<size_t>(window * n_ctx + n_ctx / 2 + 1);
    for_each_row(pool, rows, [&](int64_t r) {
      const auto row = logits.subspan(static_cast<size_t>(r * vocab), static_cast<size_t>(vocab));
      const RowSummary summary = summarize_row(row);
      nll[static_cast<size_t>(r)] = summary.nll(row, evaluated[next0 + static_cast<size_t>(r)]);
      if (base) {
        encode_log_probs(row, summary, std::span(encoded).subspan(static_cast<size_t>(r * entries), static_cast<size_t>(entries)));
      }
    });
    for (double v : nll) sums.add(v);
    if (base) base->write_window(encoded);
    result.running_ppl.push_back(sums.perplexity().value);
    if (progress) progress({window, n_windows, result.running_ppl.back()});
  });
  if (base) base->close();
  result.tokens_scored = sums.count;
  result.ppl = sums.perplexity();
  result.seconds = seconds_since(start);
  return result;
}

KldResult compute_kl_divergence(const Model& model, const std::string& base_path, const PerplexityOptions& options,
                                const std::function<void(const KldProgress&)>& progress) {
  LogitsFileReader file(base_path);
  const LogitsFileHeader& header = file.header();
  if (header.n_vocab != model.info().vocab_size) {
    fail("the logits file '{}' is for a vocabulary of {} tokens; the model has {}", base_path, header.n_vocab,
         model.info().vocab_size);
  }
  if (header.n_ctx > model.info().context_length) {
    fail("the logits file '{}' holds windows of {} tokens; the model's context is {}", base_path, header.n_ctx,
         model.info().context_length);
  }
  check_context(model, header.n_ctx, options.n_batch);
  const int64_t n_ctx = header.n_ctx;
  const int64_t n_windows = options.max_chunks < 0 ? header.n_chunk : std::min(options.max_chunks, header.n_chunk);
  if (n_windows < 1) fail("--chunks must be at least 1");
  const auto evaluated = std::span<const int32_t>(file.tokens()).first(static_cast<size_t>(n_windows * n_ctx));

  const auto start = Clock::now();
  WindowEvaluator evaluator(model, n_ctx, options.n_batch, options.kv_cache_dtype,
                            options.kv_cache_rotation);
  ThreadPool pool(options.threads);
  const int64_t rows = evaluator.rows_per_window();
  const int64_t vocab = header.n_vocab;
  const int64_t entries = encoded_row_entries(vocab);
  std::vector<uint16_t> base_rows;
  std::vector<KldSample> samples(static_cast<size_t>(rows));
  KldSums sums;
  evaluator.evaluate(evaluated, window_bos(model), [&](int64_t window, std::span<const float> logits) {
    file.read_window(base_rows);  // windows are evaluated, and stored, in order
    const size_t next0 = static_cast<size_t>(window * n_ctx + n_ctx / 2 + 1);
    for_each_row(pool, rows, [&](int64_t r) {
      const auto row = logits.subspan(static_cast<size_t>(r * vocab), static_cast<size_t>(vocab));
      const EncodedRow base(std::span<const uint16_t>(base_rows).subspan(static_cast<size_t>(r * entries), static_cast<size_t>(entries)));
      samples[static_cast<size_t>(r)] = compare_with_base(row, summarize_row(row), base, evaluated[next0 + static_cast<size_t>(r)]);
    });
    for (const KldSample& s : samples) sums.add(s);
    if (progress) progress({window, n_windows, sums.perplexity(), sums.mean_kld(), sums.same_top_fraction()});
  });
  return {n_ctx, n_windows, n_windows * n_ctx, sums.report(), seconds_since(start)};
}

}  // namespace lumen::tools
