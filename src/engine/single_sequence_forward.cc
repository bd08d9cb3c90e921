#include "engine/single_sequence_forward.h"

#include <algorithm>
#include <numeric>

#include "engine/reduced_rows.h"
#include "util/error.h"

namespace lumen::engine {

namespace {
constexpr int64_t kBlockSize = 16;
}

SingleSequenceForward::SingleSequenceForward(LoadedModel& model, backend::Backend& backend, int64_t context,
                                             int64_t chunk, ModelParallelGroup* group)
    : model_(model),
      context_(context),
      chunk_(chunk),
      // The transformer's: a tensor-parallel shard caches its own heads only, a pipeline stage its
      // own layers (one group of them: a window frees nothing here).
      // A model split over two backends: each layer's K/V with the backend that runs it.
      cache_(backend, model.transformer->hparams(), model.transformer->kv_layout(false),
             (context + kBlockSize - 1) / kBlockSize, kBlockSize, tensor::DType::F16, true, model.transformer->split()),
      last_logits_buffer_(
          model.transformer->allocate_logits(static_cast<size_t>(model.hparams.vocab_size) * sizeof(float))),
      last_logits_(static_cast<float*>(last_logits_buffer_->data()), static_cast<size_t>(model.hparams.vocab_size)) {
  std::fill(last_logits_.begin(), last_logits_.end(), 0.0f);
  model.transformer->set_context_length(context);  // Phi-3's LongRoPE factor set
  // One sequence owns every block, in order.
  block_table_.resize(static_cast<size_t>(cache_.n_blocks()));
  if (model::has_recurrent_state(model.hparams))
    states_ = std::make_unique<model::StateCache>(backend, model.hparams, 1);
  std::iota(block_table_.begin(), block_table_.end(), 0);
  if (group != nullptr && group->size() > 1) {
    // One group of every layer, as cache_ (a window frees nothing here).
    leader_ = std::make_unique<ModelParallelLeader>(
        *group, ShardCacheGeometry{cache_.n_blocks(), kBlockSize, KvCacheDtype::F16, true, false, 0});
  }
}

void SingleSequenceForward::truncate(int64_t n) {
  const int64_t keep = std::min(n_past_, std::max<int64_t>(n, 0));
  if (states_ && keep != 0 && keep != n_past_) {
    fail("a state-space model cannot go back to token {} of {}: its state holds them all (start again)", keep, n_past_);
  }
  n_past_ = keep;
}

void SingleSequenceForward::require_room(size_t tokens) const {
  if (n_past_ + static_cast<int64_t>(tokens) > context_) {
    fail("{} tokens do not fit: {} of the {}-token context are used", tokens, n_past_, context_);
  }
}

// Logits of the chunk's last `last_rows` rows into `logits`: every row, the last one, or none (a
// prompt chunk that is not the last: its output projection would be wasted).
void SingleSequenceForward::forward_chunk(std::span<const int32_t> tokens, int64_t last_rows, float* logits,
                                          backend::RowArgmax* argmax) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  positions_.resize(tokens.size());
  std::iota(positions_.begin(), positions_.end(), static_cast<int32_t>(n_past_));
  logit_rows_.clear();
  for (int64_t i = n - last_rows; i < n; ++i) logit_rows_.push_back(static_cast<int32_t>(i));
  backend::SequenceSlice slice{0, n, n_past_, block_table_};
  model::ForwardBatch batch{tokens, positions_, std::span(&slice, 1), logit_rows_};
  static constexpr uint8_t kArgmaxForm = static_cast<uint8_t>(backend::RowForm::Argmax);
  if (argmax != nullptr && logit_rows_.size() == 1) {
    *argmax = backend::RowArgmax{};
    batch.row_forms = std::span(&kArgmaxForm, 1);
    batch.argmax = argmax;
  }
  static constexpr int32_t kOnlySlot = 0;
  if (states_) {
    batch.states = states_.get();
    batch.state_slots = std::span(&kOnlySlot, 1);
  }
  if (leader_) leader_->send_step(&batch);
  model_.transformer->forward(batch, cache_, logits);
  n_past_ += n;
}

void SingleSequenceForward::feed_last_row(std::span<const int32_t> tokens, backend::RowArgmax* argmax) {
  require_room(tokens.size());
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(chunk_)) {
    auto part = tokens.subspan(start, std::min(tokens.size() - start, static_cast<size_t>(chunk_)));
    const bool last = start + part.size() == tokens.size();
    forward_chunk(part, last ? 1 : 0, last ? last_logits_.data() : nullptr, last ? argmax : nullptr);
  }
}

std::span<const float> SingleSequenceForward::feed(std::span<const int32_t> tokens) {
  feed_last_row(tokens, nullptr);
  return last_logits_;
}

int32_t SingleSequenceForward::feed_greedy(std::span<const int32_t> tokens) {
  if (tokens.empty()) fail("feed_greedy: no tokens");
  backend::RowArgmax reduced;
  feed_last_row(tokens, &reduced);
  // A backend that left the row whole wrote it: reduced here, the same way.
  if (reduced.token < 0) reduced = host_row_argmax(last_logits_);
  return reduced.token;
}

void SingleSequenceForward::feed_last_logits(std::span<const int32_t> tokens, int64_t rows,
                                             std::vector<float>& logits_out) {
  if (tokens.empty() || static_cast<int64_t>(tokens.size()) > chunk_) {
    fail("feed_last_logits: {} tokens, where one pass takes 1 to {}", tokens.size(), chunk_);
  }
  if (rows < 1 || rows > static_cast<int64_t>(tokens.size())) {
    fail("feed_last_logits: {} rows of logits asked of {} tokens", rows, tokens.size());
  }
  require_room(tokens.size());
  logits_out.resize(static_cast<size_t>(rows) * model_.hparams.vocab_size);
  forward_chunk(tokens, rows, logits_out.data());
}

void SingleSequenceForward::feed_all_logits(std::span<const int32_t> tokens, std::vector<float>& logits_out) {
  require_room(tokens.size());
  const size_t vocab = model_.hparams.vocab_size;
  logits_out.resize(tokens.size() * vocab);
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(chunk_)) {
    auto part = tokens.subspan(start, std::min(tokens.size() - start, static_cast<size_t>(chunk_)));
    forward_chunk(part, static_cast<int64_t>(part.size()), logits_out.data() + start * vocab);
  }
  if (!tokens.empty()) {
    std::copy_n(logits_out.end() - static_cast<std::ptrdiff_t>(vocab), vocab, last_logits_.begin());
  }
}

}  // namespace lumen::engine
