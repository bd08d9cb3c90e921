#include "engine/model_runner.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::engine {

ModelRunner::ModelRunner(model::Transformer& transformer, model::KvCache& cache, SwapSpace* swap)
    : transformer_(transformer),
      cache_(cache),
      swap_(swap),
      vocab_(static_cast<int64_t>(transformer.hparams().vocab_size)) {}

std::span<float> ModelRunner::run(const StepPlan& plan) {
  if ((!plan.swap_out.empty() || !plan.swap_in.empty()) && swap_ == nullptr) {
    fail("model runner: the plan swaps blocks but the engine has no swap space");
  }
  for (const SwapCopy& out : plan.swap_out) cache_.read_block(out.block, swap_->slot_data(out.slot));
  for (const kv::BlockCopy& copy : plan.copies) cache_.copy_block(copy.src, copy.dst);
  for (const SwapCopy& in : plan.swap_in) cache_.write_block(in.block, swap_->slot_data(in.slot));
  for (const KeyShift& shift : plan.key_shifts) transformer_.shift_keys(cache_, shift.blocks, shift.delta);
  tokens_.clear();
  positions_.clear();
  slices_.clear();
  logit_rows_.clear();
  chunk_logits_.clear();
  const size_t n_groups = cache_.layout().n_groups();
  slices_.resize(plan.chunks.size() * n_groups);
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const ScheduledChunk& chunk = plan.chunks[c];
    const Sequence& seq = *chunk.seq;
    const auto first = static_cast<int64_t>(tokens_.size());
    const int64_t n_known = chunk.n_tokens - chunk.n_draft;
    if (chunk.n_draft < 0 || chunk.n_draft > std::ssize(seq.draft) || (chunk.n_draft > 0 && !chunk.samples)) {
      fail("model runner: a chunk of {} draft tokens for a draft of {}", chunk.n_draft, seq.draft.size());
    }
    for (int64_t i = 0; i < chunk.n_tokens; ++i) {
      tokens_.push_back(i < n_known ? seq.tokens[static_cast<size_t>(seq.n_computed + i)]
                                    : seq.draft[static_cast<size_t>(i - n_known)]);
      positions_.push_back(static_cast<int32_t>(seq.n_computed + i));
    }
    // Group by group (ForwardBatch): the same rows and positions, each group's own table.
    for (size_t g = 0; g < n_groups; ++g) {
      slices_[g * plan.chunks.size() + c] = {first, chunk.n_tokens, seq.n_computed, seq.blocks.table(g)};
    }
    ChunkLogits rows;
    rows.first_row = static_cast<int64_t>(logit_rows_.size());
    rows.first_prompt_position = std::max(seq.n_computed, seq.next_prompt_logit);
    const int64_t prompt_end = std::min(seq.n_computed + n_known, seq.prompt_len - 1);
    rows.n_prompt_rows = std::max<int64_t>(0, prompt_end - rows.first_prompt_position);
    for (int64_t p = 0; p < rows.n_prompt_rows; ++p) {
      logit_rows_.push_back(static_cast<int32_t>(first + rows.first_prompt_position - seq.n_computed + p));
    }
    rows.samples = chunk.samples;
    rows.n_draft = chunk.n_draft;
    for (int64_t r = n_known - 1; chunk.samples && r < chunk.n_tokens; ++r) {
      logit_rows_.push_back(static_cast<int32_t>(first + r));
    }
    chunk_logits_.push_back(rows);
  }
  logits_.resize(logit_rows_.size() * static_cast<size_t>(vocab_));
  if (tokens_.empty()) return {};
  model::ForwardBatch batch{tokens_, positions_, slices_, logit_rows_};
  transformer_.forward(batch, cache_, logits_.data());
  return logits_;
}

}  // namespace lumen::engine
