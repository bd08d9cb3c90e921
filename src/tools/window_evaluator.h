#pragma once
// The forward passes of perplexity: a text cut into windows of n_ctx tokens, each evaluated
// from an empty context (its first token replaced by BOS when the vocabulary adds one, as
// llama-perplexity does) and, since only the second half of a window is scored, logits wanted
// for positions n_ctx/2 .. n_ctx-2 alone. Several windows run in one flat batch (one sequence
// each, with its own block table) so the linear layers see n_batch tokens at a time; a window
// longer than n_batch is fed in pieces of n_batch tokens. A state-space model's windows each run
// from their own recurrent-state slot (window w of a group in slot w), zeroed at position 0.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lumen/engine_config.h"
#include "lumen/model.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"

namespace lumen::tools {

class WindowEvaluator {
 public:
  // n_ctx >= 4 and at most the model's context; n_batch >= 1. K/V are kept in `kv_dtype`.
  WindowEvaluator(const Model& model, int64_t n_ctx, int64_t n_batch, KvCacheDtype kv_dtype = KvCacheDtype::F16,
                  bool kv_rotation = true);

  int64_t n_ctx() const { return n_ctx_; }
  int64_t windows_per_batch() const { return windows_per_batch_; }
  int64_t rows_per_window() const { return n_ctx_ - 1 - n_ctx_ / 2; }

  // Evaluates `count` windows: tokens holds count * n_ctx tokens. For each window, in order,
  // calls on_window(index, logits) with rows_per_window() rows of vocab_size logits.
  using WindowFn = std::function<void(int64_t window, std::span<const float> logits)>;
  void evaluate(std::span<const int32_t> tokens, std::optional<int32_t> bos, const WindowFn& on_window);

 private:
  void run_group(std::span<const int32_t> tokens, int64_t n_windows, std::optional<int32_t> bos);

  Model model_;  // keeps the weights alive
  int64_t n_ctx_;
  int64_t n_batch_;
  int64_t windows_per_batch_;
  int64_t blocks_per_window_;
  size_t vocab_;
  model::KvCache cache_;
  std::unique_ptr<model::StateCache> states_;  // a state-space model's (null otherwise)
  std::vector<int32_t> state_slots_;           // 0 .. windows_per_batch - 1
  std::vector<int32_t> block_tables_;
  std::vector<int32_t> batch_tokens_, positions_, logit_rows_;
  std::vector<float> logits_;  // windows_per_batch * rows_per_window rows
};

}  // namespace lumen::tools
