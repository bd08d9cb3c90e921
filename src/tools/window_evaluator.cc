#include "tools/window_evaluator.h"

#include <algorithm>
#include <numeric>

#include "engine/kv_cache_dtype.h"
#include "engine/model_state.h"
#include "util/error.h"

namespace lumen::tools {

namespace {
constexpr int64_t kBlockSize = 16;

// Checked before anything is sized from it (the CLI has said so in its own words already).
int64_t checked_context(int64_t n_ctx, int64_t n_batch) {
  if (n_ctx < 4 || n_batch < 1) fail("perplexity: a window needs at least 4 tokens and a batch at least 1");
  return n_ctx;
}

// As llama-perplexity: as many whole windows as fit in a batch, at least one; for a state-space
// model no more than whose states fit in kStateBytes (one window's state is fixed whatever
// n_ctx: short windows would otherwise multiply them).
int64_t windows_for(const Model& model, int64_t n_ctx, int64_t n_batch) {
  constexpr size_t kStateBytes = size_t{512} << 20;
  const int64_t windows = std::max<int64_t>(1, n_batch / n_ctx);
  const model::HParams& hp = engine::model_state(model).model->hparams;
  if (!model::has_recurrent_state(hp)) return windows;
  const auto fit = static_cast<int64_t>(kStateBytes / model::StateCache::bytes_per_slot(hp));
  return std::max<int64_t>(1, std::min(windows, fit));
}
}  // namespace

WindowEvaluator::WindowEvaluator(const Model& model, int64_t n_ctx, int64_t n_batch, KvCacheDtype kv_dtype,
                                 bool kv_rotation)
    : model_(model),
      n_ctx_(checked_context(n_ctx, n_batch)),
      n_batch_(n_batch),
      windows_per_batch_(windows_for(model, n_ctx, n_batch)),
      blocks_per_window_((n_ctx + kBlockSize - 1) / kBlockSize),
      vocab_(static_cast<size_t>(model.info().vocab_size)),
      // One group of every layer; a model split over two backends keeps each layer's K/V with
      // the backend that runs it.
      cache_(*engine::model_state(model).backend, engine::model_state(model).model->hparams,
             engine::model_state(model).model->transformer->kv_layout(false), windows_per_batch_ * blocks_per_window_,
             kBlockSize, engine::kv_tensor_type(kv_dtype), kv_rotation,
             engine::model_state(model).model->transformer->split()) {
  // Window w of a group owns blocks [w * blocks_per_window, (w + 1) * blocks_per_window).
  block_tables_.resize(static_cast<size_t>(windows_per_batch_ * blocks_per_window_));
  std::iota(block_tables_.begin(), block_tables_.end(), 0);
  const model::HParams& hp = engine::model_state(model).model->hparams;
  if (model::has_recurrent_state(hp)) {
    states_ = std::make_unique<model::StateCache>(*engine::model_state(model).backend, hp, windows_per_batch_);
    state_slots_.resize(static_cast<size_t>(windows_per_batch_));
    std::iota(state_slots_.begin(), state_slots_.end(), 0);
  }
  logits_.resize(static_cast<size_t>(windows_per_batch_ * rows_per_window()) * vocab_);
}

void WindowEvaluator::evaluate(std::span<const int32_t> tokens, std::optional<int32_t> bos,
                               const WindowFn& on_window) {
  const int64_t n_windows = static_cast<int64_t>(tokens.size()) / n_ctx_;
  const size_t window_logits = static_cast<size_t>(rows_per_window()) * vocab_;
  for (int64_t first = 0; first < n_windows; first += windows_per_batch_) {
    const int64_t count = std::min(windows_per_batch_, n_windows - first);
    run_group(tokens.subspan(static_cast<size_t>(first * n_ctx_), static_cast<size_t>(count * n_ctx_)), count, bos);
    for (int64_t w = 0; w < count; ++w) {
      on_window(first + w, std::span<const float>(logits_).subspan(static_cast<size_t>(w) * window_logits, window_logits));
    }
  }
}

// The windows of one group run side by side, piece by piece (one piece unless a window is
// longer than a batch, and then the group is one window). Their KV blocks are simply
// overwritten by the next group: positions restart at 0, so nothing stale is ever attended to.
void WindowEvaluator::run_group(std::span<const int32_t> tokens, int64_t n_windows, std::optional<int32_t> bos) {
  const int64_t piece = std::min(n_ctx_, n_batch_);
  const int64_t first_scored = n_ctx_ / 2;
  const int64_t last_scored = n_ctx_ - 2;  // the last position predicts nothing in the window
  std::vector<backend::SequenceSlice> slices(static_cast<size_t>(n_windows));
  int64_t rows_done = 0;
  for (int64_t p0 = 0; p0 < n_ctx_; p0 += piece) {
    const int64_t len = std::min(piece, n_ctx_ - p0);
    batch_tokens_.clear();
    positions_.clear();
    logit_rows_.clear();
    for (int64_t w = 0; w < n_windows; ++w) {
      const int64_t row0 = static_cast<int64_t>(batch_tokens_.size());
      for (int64_t p = p0; p < p0 + len; ++p) {
        const int32_t token = tokens[static_cast<size_t>(w * n_ctx_ + p)];
        batch_tokens_.push_back(p == 0 && bos ? *bos : token);
        positions_.push_back(static_cast<int32_t>(p));
        if (p >= first_scored && p <= last_scored) logit_rows_.push_back(static_cast<int32_t>(row0 + p - p0));
      }
      const auto table = std::span<const int32_t>(block_tables_)
                             .subspan(static_cast<size_t>(w * blocks_per_window_), static_cast<size_t>(blocks_per_window_));
      slices[static_cast<size_t>(w)] = {row0, len, p0, table};
    }
    model::ForwardBatch batch{batch_tokens_, positions_, slices, logit_rows_};
    if (states_) {
      batch.states = states_.get();
      batch.state_slots = std::span<const int32_t>(state_slots_).first(static_cast<size_t>(n_windows));
    }
    engine::model_state(model_).model->transformer->forward(batch, cache_,
                                                            logits_.data() + static_cast<size_t>(rows_done) * vocab_);
    rows_done += static_cast<int64_t>(logit_rows_.size());
  }
}

}  // namespace lumen::tools
