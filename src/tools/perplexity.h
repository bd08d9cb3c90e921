#pragma once
// `lumen perplexity`'s computation, as llama-perplexity's default mode does it so the numbers
// compare: the text's tokens (BOS first when the vocabulary adds one) cut into windows of n_ctx
// tokens, at most n_chunks of them; in each window, evaluated from an empty context with BOS
// as its first token, the second half is scored (positions n_ctx/2 .. n_ctx-2 predicting the
// next token). Perplexity is exp of the mean negative log-likelihood over every scored token.
//
// The KL-divergence mode reads a base model's log-probabilities (llama.cpp's file,
// logits_file.h), evaluates the same windows of the same tokens, and compares position by
// position. Perplexity can write such a file as it goes.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lumen/engine_config.h"
#include "lumen/model.h"
#include "tools/perplexity_stats.h"

namespace lumen::tools {

struct PerplexityOptions {
  int64_t n_ctx = 512;     // tokens per window (llama-perplexity's -c)
  int64_t n_batch = 2048;  // tokens per forward pass: n_batch / n_ctx windows side by side
  int64_t max_chunks = -1; // at most this many windows; -1: all that fit
  unsigned threads = 0;    // threads for the scoring (0: one per core)
  std::string write_base;  // non-empty: write the base-logits file there
  KvCacheDtype kv_cache_dtype = KvCacheDtype::F16;  // the windows' K/V (llama-perplexity's -ctk/-ctv)
  bool kv_cache_rotation = true;  // EngineConfig::kv_cache_rotation
};

struct WindowProgress {
  int64_t window = 0;  // 0-based
  int64_t n_windows = 0;
  double ppl = 0.0;    // over the windows so far
};

struct PerplexityResult {
  int64_t n_ctx = 0, n_windows = 0;
  int64_t tokens_evaluated = 0;  // n_windows * n_ctx: what the forward passes processed
  int64_t tokens_scored = 0;
  Estimate ppl;
  std::vector<double> running_ppl;  // after each window
  double seconds = 0.0;             // evaluation and scoring, after tokenization
};

using ProgressFn = std::function<void(const WindowProgress&)>;

// The text's tokens as llama-perplexity makes them: BOS added as the vocabulary says, control
// token text left as text. Throws lumen::Error when the vocabulary also appends EOS (windows
// would then not be plain text).
std::vector<int32_t> perplexity_tokens(const Model& model, std::string_view text);

// BOS, which replaces each window's first token when the vocabulary adds one (nullopt otherwise).
std::optional<int32_t> window_bos(const Model& model);

// The windows a text of n_tokens tokens is scored in (at most options.max_chunks). Throws
// lumen::Error (one sentence) when they are fewer than two or n_ctx does not fit the model.
int64_t perplexity_window_count(const Model& model, size_t n_tokens, const PerplexityOptions& options);

// Throws lumen::Error (one sentence) when the tokens do not make two windows, as llama-perplexity
// requires, or n_ctx does not fit the model.
PerplexityResult compute_perplexity(const Model& model, std::span<const int32_t> tokens, const PerplexityOptions& options,
                                    const ProgressFn& progress = {});

struct KldResult {
  int64_t n_ctx = 0, n_windows = 0, tokens_evaluated = 0;
  KldReport report;
  double seconds = 0.0;
};

struct KldProgress {
  int64_t window = 0, n_windows = 0;
  Estimate ppl, kld;
  double same_top = 0.0;
};

// Compares the model with the base file's log-probabilities (its n_ctx and tokens; options'
// n_ctx is not used, max_chunks limits the windows). Throws lumen::Error when the file's
// vocabulary or context does not fit the model.
KldResult compute_kl_divergence(const Model& model, const std::string& base_path, const PerplexityOptions& options,
                                const std::function<void(const KldProgress&)>& progress = {});

}  // namespace lumen::tools
