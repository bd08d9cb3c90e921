#include "tools/imatrix.h"

#include <algorithm>
#include <chrono>

#include "engine/model_state.h"
#include "tools/imatrix_collector.h"
#include "tools/window_evaluator.h"
#include "util/error.h"

namespace lumen::tools {
namespace {

// Detaches the observer however the evaluation ends, so the model is left as it was found.
class ObserverScope {
 public:
  ObserverScope(model::Transformer& transformer, model::MatmulObserver* observer) : transformer_(transformer) {
    transformer_.set_matmul_observer(observer);
  }
  ~ObserverScope() { transformer_.set_matmul_observer(nullptr); }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  model::Transformer& transformer_;
};

}  // namespace

ImatrixResult compute_imatrix(const Model& model, std::span<const int32_t> tokens, const ImatrixOptions& options,
                              const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t n_ctx = options.n_ctx;
  if (n_ctx < 4) fail("-c must be at least 4");
  if (n_ctx > model.info().context_length) {
    fail("-c {} is larger than the model's context of {} tokens", n_ctx, model.info().context_length);
  }
  if (options.n_batch < 1) fail("-b must be at least 1");
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (n_tokens < 2 * n_ctx) {
    fail("the text has {} tokens; -c {} needs at least {} (two windows, as llama-imatrix)", n_tokens, n_ctx,
         2 * n_ctx);
  }
  const int64_t available = n_tokens / n_ctx;
  const int64_t n_windows = options.max_chunks < 0 ? available : std::min(options.max_chunks, available);
  if (n_windows < 1) fail("--chunks must be at least 1");

  engine::ModelState& state = engine::model_state(model);
  const auto& special = state.model->tokenizer.vocab().special;
  const std::optional<int32_t> bos = special.add_bos ? special.bos : std::nullopt;
  ImatrixCollector collector(*state.model->file, *state.backend);
  WindowEvaluator evaluator(model, n_ctx, options.n_batch);
  const auto start = std::chrono::steady_clock::now();
  {
    ObserverScope scope(*state.model->transformer, &collector);
    evaluator.evaluate(tokens.first(static_cast<size_t>(n_windows * n_ctx)), bos,
                       [&](int64_t window, std::span<const float>) {
                         if (progress) progress(window, n_windows);
                       });
  }
  ImatrixResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.imatrix = collector.entries();
  if (!options.dataset.empty()) result.imatrix.datasets = {options.dataset};
  result.imatrix.chunk_count = static_cast<uint32_t>(n_windows);
  result.imatrix.chunk_size = static_cast<uint32_t>(n_ctx);
  result.n_windows = n_windows;
  result.tokens_evaluated = n_windows * n_ctx;
  return result;
}

}  // namespace lumen::tools
