#include "engine/model_runner.h"

#include <algorithm>
#include <limits>

#include "engine/reduced_rows.h"
#include "engine/model_parallel.h"
#include "engine/prompt_images.h"
#include "spec/token_tree.h"
#include "util/error.h"

namespace lumen::engine {

namespace {

// The attention mask of a chunk of `n_known` rows of the sequence itself, then `n_draft` draft
// rows (a chain when `draft_parents` is empty, else a token tree: each row follows its parent,
// -1 for the last known row), then extra rows each extending its `extra_parents` entry (-1: the
// last known row, else an earlier extra row). Row r sees row c when visible[r * n + c]. Known
// rows see what causal attention shows them; a draft or extra row sees the known rows, its
// ancestors and itself: never another branch, and extra rows never the draft (nor it them).
void tree_mask(int64_t n_known, int64_t n_draft, std::span<const int32_t> draft_parents,
               std::span<const int32_t> extra_parents, std::span<uint8_t> visible) {
  const int64_t n_chain = n_known + n_draft;
  const int64_t n = n_chain + std::ssize(extra_parents);
  std::fill(visible.begin(), visible.end(), uint8_t{0});
  for (int64_t r = 0; r < n_known; ++r) std::fill_n(visible.begin() + r * n, r + 1, uint8_t{1});
  // Row `r` extends row `parent` of its part (-1: the last known row), which starts at `base`.
  auto extend = [&](int64_t r, int64_t parent, int64_t base, int64_t index) {
    if (parent >= index || parent < -1) fail("model runner: row {} extends row {}, not an earlier one", index, parent);
    if (parent < 0) {
      std::fill_n(visible.begin() + r * n, n_known, uint8_t{1});
    } else {
      std::copy_n(visible.begin() + (base + parent) * n, n, visible.begin() + r * n);  // the parent's view
    }
    visible[static_cast<size_t>(r * n + r)] = 1;
  };
  for (int64_t d = 0; d < n_draft; ++d) {
    extend(n_known + d, draft_parents.empty() ? d - 1 : draft_parents[static_cast<size_t>(d)], n_known, d);
  }
  for (int64_t e = 0; e < std::ssize(extra_parents); ++e) extend(n_chain + e, extra_parents[static_cast<size_t>(e)], n_chain, e);
}

}  // namespace

ModelRunner::ModelRunner(model::Transformer& transformer, model::KvCache& cache, SwapSpace* swap)
    : transformer_(transformer),
      cache_(cache),
      swap_(swap),
      vocab_(static_cast<int64_t>(transformer.hparams().vocab_size)) {}

std::span<float> ModelRunner::run(const StepPlan& plan, std::span<const ChunkForm> chunk_forms) {
  if ((!plan.swap_out.empty() || !plan.swap_in.empty()) && swap_ == nullptr) {
    fail("model runner: the plan swaps blocks but the engine has no swap space");
  }
  for (const SwapCopy& out : plan.swap_out) {
    cache_.read_block(out.block, swap_->slot_data(out.slot));
    if (leader_) leader_->ops().swap_out(out.block, out.slot);
  }
  for (const KvCompaction& c : plan.compactions) {
    if (leader_) fail("importance-based KV eviction is not supported with tensor, pipeline or expert parallelism");
    transformer_.compact_kv(cache_, c.src, c.dst, c.keep);
  }
  for (const kv::BlockCopy& copy : plan.copies) {
    cache_.copy_block(copy.src, copy.dst);
    if (leader_) leader_->ops().copy_block(copy.src, copy.dst);
  }
  for (const SwapCopy& in : plan.swap_in) {
    cache_.write_block(in.block, swap_->slot_data(in.slot));
    if (leader_) leader_->ops().swap_in(in.block, in.slot);
  }
  for (const KeyShift& shift : plan.key_shifts) {
    transformer_.shift_keys(cache_, shift.blocks, shift.delta);
    if (leader_) leader_->ops().shift_keys(shift.blocks, shift.delta);
  }
  if (!plan.state_copies.empty() && states_ == nullptr) fail("model runner: the plan copies states of a model without");
  for (const StateCopy& copy : plan.state_copies) states_->copy(copy.src, copy.dst);
  move_states(plan);
  tokens_.clear();
  positions_.clear();
  slices_.clear();
  state_slots_.clear();
  logit_rows_.clear();
  embedding_spans_.clear();
  chunk_logits_.clear();
  scores_.clear();
  if (!chunk_forms.empty() && chunk_forms.size() != plan.chunks.size()) {
    fail("model runner: {} row forms for {} chunks", chunk_forms.size(), plan.chunks.size());
  }
  size_t mask_bytes = 0;
  for (const ScheduledChunk& chunk : plan.chunks) {
    if (chunk.n_extra > 0 || (chunk.n_draft > 0 && !chunk.seq->draft_parents.empty())) {
      mask_bytes += static_cast<size_t>(chunk.n_tokens * chunk.n_tokens);
    }
  }
  masks_.resize(mask_bytes);
  size_t mask_at = 0;
  key_ends_.clear();
  key_ends_at_.assign(plan.chunks.size(), -1);
  const size_t n_groups = cache_.layout().n_groups();
  slices_.resize(plan.chunks.size() * n_groups);
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    const ScheduledChunk& chunk = plan.chunks[c];
    const Sequence& seq = *chunk.seq;
    const auto first = static_cast<int64_t>(tokens_.size());
    if (states_ != nullptr) {
      if (seq.state_slot < 0) fail("model runner: a sequence of a state-space model runs without a state slot");
      if (chunk.n_draft > 0 || chunk.n_extra > 0) fail("model runner: a state-space model cannot verify drafts");
      state_slots_.push_back(seq.state_slot);
    }
    const int64_t n_known = chunk.n_known();
    if (chunk.n_draft < 0 || chunk.n_draft > std::ssize(seq.draft) || (chunk.n_draft > 0 && !chunk.samples)) {
      fail("model runner: a chunk of {} draft tokens for a draft of {}", chunk.n_draft, seq.draft.size());
    }
    if (chunk.n_extra != 0 && (chunk.n_extra != std::ssize(seq.extra.tokens) || !chunk.samples)) {
      fail("model runner: a chunk of {} extra rows for {}", chunk.n_extra, seq.extra.size());
    }
    const bool tree = chunk.n_draft > 0 && !seq.draft_parents.empty();
    if (tree && seq.draft_parents.size() != seq.draft.size()) {
      fail("model runner: a token tree of {} parents for {} draft tokens", seq.draft_parents.size(), seq.draft.size());
    }
    if (seq.images) {
      // Only known rows can be prompt positions: drafts and extra rows come after the prompt.
      append_image_spans(*seq.images, seq.n_computed, n_known, first,
                         static_cast<int64_t>(transformer_.hparams().embedding_length), embedding_spans_);
      if (seq.images_both_ways && holds_image_rows(*seq.images, seq.n_computed, n_known)) {
        if (chunk.n_tokens != n_known) fail("model runner: drafts in a chunk of a prompt with image spans");
        key_ends_at_[c] = static_cast<int64_t>(key_ends_.size());
        append_key_ends(*seq.images, seq.n_computed, n_known, key_ends_);
      }
    }
    const int64_t n_guessed = n_known + chunk.n_draft;
    for (int64_t i = 0; i < n_guessed; ++i) {
      tokens_.push_back(i < n_known ? seq.tokens[static_cast<size_t>(seq.n_computed + i)]
                                    : seq.draft[static_cast<size_t>(i - n_known)]);
      positions_.push_back(static_cast<int32_t>(seq.position_of(seq.n_computed + i)));
    }
    std::span<const int32_t> draft_parents;
    if (tree) {
      // A tree node's position is the last known row's plus its depth.
      draft_parents = std::span<const int32_t>(seq.draft_parents).first(static_cast<size_t>(chunk.n_draft));
      depths_ = spec::node_depths(draft_parents);
      for (int64_t d = 0; d < chunk.n_draft; ++d) {
        positions_[static_cast<size_t>(first + n_known + d)] =
            static_cast<int32_t>(seq.position_of(seq.n_computed + n_known - 1) + depths_[static_cast<size_t>(d)]);
      }
    }
    std::span<const uint8_t> visible;
    if (chunk.n_extra > 0 || tree) {
      // The last known row's position: the extra rows' depths count from it.
      const int64_t last = seq.position_of(seq.n_computed + n_known - 1);
      const std::span<const int32_t> extra_parents =
          chunk.n_extra > 0 ? std::span<const int32_t>(seq.extra.parent) : std::span<const int32_t>();
      for (int64_t e = 0; e < chunk.n_extra; ++e) {
        tokens_.push_back(seq.extra.tokens[static_cast<size_t>(e)]);
        positions_.push_back(static_cast<int32_t>(last + seq.extra.depth[static_cast<size_t>(e)]));
      }
      visible = std::span<const uint8_t>(masks_).subspan(mask_at, static_cast<size_t>(chunk.n_tokens * chunk.n_tokens));
      tree_mask(n_known, chunk.n_draft, draft_parents, extra_parents,
                std::span<uint8_t>(masks_).subspan(mask_at, visible.size()));
      mask_at += visible.size();
    }
    // Group by group (ForwardBatch): the same rows and positions, each group's own table.
    for (size_t g = 0; g < n_groups; ++g) {
      slices_[g * plan.chunks.size() + c] = {first, chunk.n_tokens, seq.n_computed, seq.blocks.table(g), visible};
    }
    if (seq.importance.config.enabled()) {
      const int64_t first_scored =
          first_scored_row(seq.importance, seq.n_computed, chunk.n_tokens, std::ssize(seq.tokens));
      if (first_scored < chunk.n_tokens) {
        // The table grows with the slots; the runner is its only writer (the scheduler reads it
        // between steps).
        const auto n_lh =
            static_cast<size_t>(transformer_.hparams().head_count_kv * transformer_.hparams().block_count);
        std::vector<float>& table = chunk.seq->importance.scores;
        table.resize(static_cast<size_t>(seq.n_computed + chunk.n_tokens) * n_lh, 0.0f);
        scores_.push_back({c, first_scored, table.data()});
      }
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
    if (!chunk_forms.empty() && chunk_forms[c].form != backend::RowForm::Whole) {
      if (!chunk.samples || chunk.n_extra != 0) {
        fail("model runner: only a chunk that samples, without extra rows, can ask for its rows reduced");
      }
      rows.form = chunk_forms[c].form;
    }
    for (int64_t r = n_known - 1; chunk.samples && r < n_guessed; ++r) {
      logit_rows_.push_back(static_cast<int32_t>(first + r));
    }
    if (chunk.n_extra > 0) {
      rows.n_extra_logits = seq.extra.n_logits;
      for (int64_t r = chunk.n_tokens - rows.n_extra_logits; r < chunk.n_tokens; ++r) {
        logit_rows_.push_back(static_cast<int32_t>(first + r));
      }
    }
    chunk_logits_.push_back(rows);
  }
  // Key ends are set once key_ends_ no longer grows, in every group's slice of the chunk.
  for (size_t c = 0; c < plan.chunks.size(); ++c) {
    if (key_ends_at_[c] < 0) continue;
    for (size_t g = 0; g < n_groups; ++g) {
      backend::SequenceSlice& slice = slices_[g * plan.chunks.size() + c];
      slice.key_ends = std::span<const int32_t>(key_ends_).subspan(static_cast<size_t>(key_ends_at_[c]),
                                                                   static_cast<size_t>(slice.n_tokens));
    }
  }
  // A masked slice's rows have positions of their own (tree nodes, window rows), from which a
  // sliding window counts: set once positions_ no longer grows.
  for (backend::SequenceSlice& slice : slices_) {
    if (!slice.visible.empty()) {
      slice.positions = std::span<const int32_t>(positions_).subspan(static_cast<size_t>(slice.first_token),
                                                                      static_cast<size_t>(slice.n_tokens));
    }
  }
  const size_t n_logits = logit_rows_.size() * static_cast<size_t>(vocab_);
  if (logits_buffer_ == nullptr || logits_buffer_->size() < n_logits * sizeof(float)) {
    // A quarter more than asked: a batch that grows a little does not reallocate every step.
    logits_buffer_ = transformer_.allocate_logits((n_logits + n_logits / 4) * sizeof(float));
  }
  logits_ = std::span<float>(static_cast<float*>(logits_buffer_->data()), n_logits);
  const size_t n_rows = logit_rows_.size();
  row_forms_.assign(n_rows, static_cast<uint8_t>(backend::RowForm::Whole));
  leading_scale_.assign(n_rows, 0.0f);
  row_present_.assign(n_rows, 1);
  unpoisoned_at_.assign(n_rows, -1);
  unpoisoned_.clear();
  bool any_argmax = false, any_leading = false;
  for (size_t c = 0; c < chunk_logits_.size(); ++c) {
    const ChunkLogits& rows = chunk_logits_[c];
    if (rows.form == backend::RowForm::Whole) continue;
    for (int64_t r = 0; r < rows.n_sample_rows(); ++r) {
      const auto row = static_cast<size_t>(rows.sample_row() + r);
      row_forms_[row] = static_cast<uint8_t>(rows.form);
      if (rows.form == backend::RowForm::Leading) leading_scale_[row] = chunk_forms[c].leading_scale;
    }
    const auto n = static_cast<uint64_t>(rows.n_sample_rows());
    if (rows.form == backend::RowForm::Argmax) {
      any_argmax = true;
      n_argmax_rows_ += n;
    } else {
      any_leading = true;
      n_leading_rows_ += n;
    }
  }
  // Entries a backend that reduces nothing leaves as they are: "not computed".
  if (any_argmax) argmax_.assign(n_rows, backend::RowArgmax{});
  if (any_leading) {
    if (leading_.size() < n_rows) leading_.resize(n_rows);
    for (backend::RowLeading& entry : leading_) entry.count = -1;
  }
  model::ForwardBatch batch{tokens_, positions_, slices_, logit_rows_};
  batch.scores = scores_;
  if (any_argmax || any_leading) {
    batch.row_forms = row_forms_;
    batch.argmax = any_argmax ? argmax_.data() : nullptr;
    batch.leading = any_leading ? leading_.data() : nullptr;
    if (any_leading) batch.leading_scale = leading_scale_;
  }
  batch.embeddings = embedding_spans_;
  if (states_ != nullptr) {
    batch.states = states_;
    batch.state_slots = state_slots_;
  }
  // The other ranks start the step while this one does (their all-reduces wait for its).
  if (leader_) leader_->send_step(tokens_.empty() ? nullptr : &batch);
  if (tokens_.empty()) return {};
  transformer_.forward(batch, cache_, logits_.data());
  if (any_argmax || any_leading) reduce_rows();
  return logits_;
}

void ModelRunner::reduce_rows() {
  const auto vocab = static_cast<size_t>(vocab_);
  for (size_t r = 0; r < row_forms_.size(); ++r) {
    const auto form = static_cast<backend::RowForm>(row_forms_[r]);
    if (form == backend::RowForm::Whole) continue;
    const std::span<float> row = std::span<float>(logits_).subspan(r * vocab, vocab);
    // A backend that reduced the row set its entry and may have left the logits unwritten; one
    // that did not wrote the row.
    if (form == backend::RowForm::Argmax) {
      if (argmax_[r].token >= 0) {
        row_present_[r] = 0;
      } else {
        argmax_[r] = host_row_argmax(row);
      }
    } else if (leading_[r].count >= 0) {
      row_present_[r] = 0;
    } else if (poison_reduced_rows_) {
      // Left whole, the row is sampled whole (the same draw, at no extra cost); a test that
      // poisons it reduces it here first, as a device would.
      host_row_leading(row, leading_scale_[r], leading_[r]);
    }
    if (poison_reduced_rows_ && row_present_[r] != 0) {
      if (form == backend::RowForm::Leading) {  // what whole_row brings back, as from a device
        unpoisoned_at_[r] = static_cast<int64_t>(unpoisoned_.size());
        unpoisoned_.insert(unpoisoned_.end(), row.begin(), row.end());
      }
      std::fill(row.begin(), row.end(), std::numeric_limits<float>::quiet_NaN());
      row_present_[r] = 0;
    }
  }
}

bool ModelRunner::row_finite(size_t r) const {
  const auto form = static_cast<backend::RowForm>(row_forms_[r]);
  if (form == backend::RowForm::Argmax) return argmax_[r].finite != 0;
  if (form == backend::RowForm::Leading && leading_[r].count >= 0) return leading_[r].finite != 0;
  return all_finite(logits_.subspan(r * static_cast<size_t>(vocab_), static_cast<size_t>(vocab_)));
}

void ModelRunner::bring_back(std::span<const int32_t> rows) {
  const auto vocab = static_cast<size_t>(vocab_);
  fetch_.clear();
  for (const int32_t r : rows) {
    if (r < 0 || static_cast<size_t>(r) >= row_present_.size()) {
      fail("model runner: logit row {} of {}", r, row_present_.size());
    }
    const auto i = static_cast<size_t>(r);
    if (row_present_[i] != 0) continue;
    if (unpoisoned_at_[i] >= 0) {  // a test's poisoned row: the real one, as a device keeps it
      const auto from = unpoisoned_.begin() + unpoisoned_at_[i];
      std::copy(from, from + static_cast<std::ptrdiff_t>(vocab),
                logits_.begin() + static_cast<std::ptrdiff_t>(i * vocab));
      row_present_[i] = 1;
      ++n_rows_brought_back_;
    } else if (std::find(fetch_.begin(), fetch_.end(), r) == fetch_.end()) {
      fetch_.push_back(r);
    }
  }
  if (fetch_.empty()) return;
  transformer_.copy_logit_rows(fetch_, logits_.data());  // one wait for them all
  for (const int32_t r : fetch_) row_present_[static_cast<size_t>(r)] = 1;
  n_rows_brought_back_ += fetch_.size();
}

std::span<const float> ModelRunner::whole_row(size_t r) {
  const auto row = static_cast<int32_t>(r);
  bring_back(std::span(&row, 1));
  return logits_.subspan(r * static_cast<size_t>(vocab_), static_cast<size_t>(vocab_));
}

void ModelRunner::move_states(const StepPlan& plan) {
  const bool swaps = !plan.state_swap_out.empty() || !plan.state_swap_in.empty();
  if ((swaps || !plan.state_restores.empty()) && states_ == nullptr)
    fail("model runner: the plan moves states of a model without");
  if (swaps && state_swap_ == nullptr)
    fail("model runner: the plan swaps states but the engine has no state swap space");
  if (!plan.state_restores.empty() && snapshots_ == nullptr)
    fail("model runner: the plan restores states without snapshots");
  // Out first: a slot a victim gives back may be written below by the sequence that takes it.
  for (const StateMove& out : plan.state_swap_out) states_->read_slot(out.slot, state_swap_->slot_data(out.place));
  for (const StateMove& in : plan.state_swap_in) states_->write_slot(in.slot, state_swap_->slot_data(in.place));
  for (const StateMove& r : plan.state_restores) states_->write_slot(r.slot, snapshots_->data(r.place));
}

void ModelRunner::save_state_snapshots(std::span<const StateMove> saves) {
  if (saves.empty()) return;
  if (states_ == nullptr || snapshots_ == nullptr) fail("model runner: state snapshots without states or snapshots");
  for (const StateMove& s : saves) states_->read_slot(s.slot, snapshots_->data(s.place));
}

void ModelRunner::zero_block(int64_t block) {
  cache_.zero_block(block);
  if (leader_) leader_->ops().zero_block(block);
}

void ModelRunner::copy_position(int64_t src_block, int64_t src_slot, int64_t dst_block, int64_t dst_slot) {
  cache_.copy_position(src_block, src_slot, dst_block, dst_slot);
  if (leader_) leader_->ops().copy_position(src_block, src_slot, dst_block, dst_slot);
}

}  // namespace lumen::engine
