#pragma once
// Turns a step plan into one flat batch and runs it: the block moves first (swap out,
// copy-on-write, swap in; the order StepPlan documents), then
// a single forward pass over the scheduled tokens of every sequence (each attending through its
// own block table), with logits only for the rows someone reads: the last row of each chunk
// that samples (and the rows of its draft tokens, when it carries one), and the prompt rows of a
// sequence that asked for prompt log-probabilities. A chunk with a proposer's extra rows
// (spec::ExtraRows) gets them after its draft, at their own positions, with a tree attention
// mask that lets each see the context, the last token and its own chain only.
//
// Everything that changes the target model's KV cache goes through here, so that under tensor
// parallelism (engine/model_parallel.h) the other ranks can make the same changes to theirs.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "engine/swap_space.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"
#include "model/transformer.h"

namespace lumen::engine {

// Where a chunk's rows of logits are in run()'s result.
struct ChunkLogits {
  int64_t first_row = 0;
  // Rows first_row.. hold the logits after prompt positions first_prompt_position.. (each
  // predicting the next prompt token); n_prompt_rows may be 0.
  int64_t first_prompt_position = 0;
  int64_t n_prompt_rows = 0;
  // The chunk samples: its row is first_row + n_prompt_rows. With a draft of n_draft tokens
  // (speculative decoding) the n_draft rows after it follow: row j predicts the token after
  // draft token j.
  bool samples = false;
  int64_t n_draft = 0;
  // Then the rows of the last n_extra_logits extra rows (ExtraRows::n_logits), when the chunk
  // carries its proposer's extra rows.
  int64_t n_extra_logits = 0;
  // How the sampling rows (the next token's and a draft's) were asked for (run()'s
  // chunk_forms): Argmax, row_argmax() holds them; Leading, row_leading() does; either way their
  // logits may not have been written (whole_row() brings one back).
  backend::RowForm form = backend::RowForm::Whole;
  int64_t n_sample_rows() const { return samples ? 1 + n_draft : 0; }
  int64_t sample_row() const { return first_row + n_prompt_rows; }
};

class ModelParallelLeader;

// How a chunk's sampling rows come back (reduced_rows.h): its form, and for Leading the scale
// the row's total weight is wanted at (0: none; sampling::Sampler::leading_total_scale).
struct ChunkForm {
  backend::RowForm form = backend::RowForm::Whole;
  float leading_scale = 0.0f;
};

class ModelRunner {
 public:
  ModelRunner(model::Transformer& transformer, model::KvCache& cache, SwapSpace* swap = nullptr);
  // Tensor parallelism's rank 0: every cache change and forward pass from now on goes to the
  // other ranks too.
  void set_leader(ModelParallelLeader* leader) { leader_ = leader; }
  // A state-space model's recurrent states: each chunk's sequence runs from its state slot
  // (Sequence::state_slot), and the plan's state copies (forks) are made before the pass.
  void set_states(model::StateCache* states) { states_ = states; }
  // Where states go beside them: the state prefix cache's snapshots and swapped-out states'
  // host slots (either may be null: none).
  void set_state_places(StateSnapshots* snapshots, SwapSpace* state_swap) {
    snapshots_ = snapshots;
    state_swap_ = state_swap;
  }
  // After a step's complete(): copies each slot's state into its snapshot entry
  // (Scheduler::take_state_snapshots).
  void save_state_snapshots(std::span<const StateMove> saves);

  // Returns the rows of vocab logits chunk_logits() describes (a view into a buffer that the
  // next call overwrites). `chunk_forms`: empty, or one per chunk of the plan: how its sampling
  // rows come back (reduced_rows.h; only a chunk that samples, with no extra rows, may ask for
  // a reduced form), which row_argmax() or row_leading() then holds.
  std::span<float> run(const StepPlan& plan, std::span<const ChunkForm> chunk_forms = {});
  // One entry per chunk of the last run's plan, in plan order.
  const std::vector<ChunkLogits>& chunk_logits() const { return chunk_logits_; }
  // Per logit row of the last run: the reduction of each row ChunkLogits::form names (the
  // other entries mean nothing).
  std::span<const backend::RowArgmax> row_argmax() const { return argmax_; }
  // A Leading row's entry has count -1 when the backend wrote the row whole: it is sampled
  // from whole_row() then.
  std::span<const backend::RowLeading> row_leading() const { return leading_; }
  // Whether sampling row `row` of the last run is all finite: from its reduction's flag, or
  // from the row.
  bool row_finite(size_t row) const;
  // Logit row `row` of the last run whole, for a reduced row whose sampler needs it after all
  // (Sampler::sample_leading declined): copied back from the backend when it was left
  // unwritten. Valid until the next run.
  std::span<const float> whole_row(size_t row);
  // Brings back the reduced rows among `rows` that are not here yet, together (one copy from
  // the backend, one wait): for the rows a step's samplers will need whole.
  void bring_back(std::span<const int32_t> rows);
  // Tests: the reduced rows get NaN logits after each run, as a device backend that never
  // copied them back leaves them, so that a test on the CPU shows nothing reads them (whole_row
  // still brings back the real row, as from a device).
  void set_poison_reduced_rows(bool on) { poison_reduced_rows_ = on; }
  // Over every run: rows asked for as their argmax, as their leading candidates, and reduced
  // rows brought back whole from the backend (a nucleus that reached past the candidates).
  uint64_t argmax_rows() const { return n_argmax_rows_; }
  uint64_t leading_rows() const { return n_leading_rows_; }
  uint64_t rows_brought_back() const { return n_rows_brought_back_; }
  int64_t vocab_size() const { return vocab_; }

  const model::KvCache& cache() const { return cache_; }
  // Sets a block to zero (the null block of dropped window entries).
  void zero_block(int64_t block);
  // Token-tree verification: the K/V of (block, slot) src copied to dst (model::KvCache).
  void copy_position(int64_t src_block, int64_t src_slot, int64_t dst_block, int64_t dst_slot);

 private:
  // The plan's state swaps and snapshot restores, after the forks' copies.
  void move_states(const StepPlan& plan);
  // After the pass: the reduced rows the backend left as logits reduced here (reduced_rows.h).
  void reduce_rows();

  model::Transformer& transformer_;
  model::KvCache& cache_;
  SwapSpace* swap_;
  ModelParallelLeader* leader_ = nullptr;
  model::StateCache* states_ = nullptr;
  StateSnapshots* snapshots_ = nullptr;
  SwapSpace* state_swap_ = nullptr;
  int64_t vocab_;
  // Reused from step to step: after warm-up a step allocates nothing here.
  std::vector<int32_t> tokens_;
  std::vector<int32_t> positions_;
  std::vector<backend::SequenceSlice> slices_;
  std::vector<int32_t> logit_rows_;
  std::vector<model::EmbeddingSpan> embedding_spans_;  // the prompt images' rows of the step
  std::vector<int32_t> state_slots_;  // per chunk, with states_
  std::vector<ChunkLogits> chunk_logits_;
  // Tree attention masks of the chunks with extra rows, one after another (SequenceSlice::visible
  // points into it: sized before any slice takes its view).
  std::vector<uint8_t> masks_;
  // Chunks' rows' key ends where image spans attend both ways (SequenceSlice::key_ends), and
  // where each chunk's run starts (-1: causal).
  std::vector<int32_t> key_ends_;
  std::vector<int64_t> key_ends_at_;
  std::vector<int32_t> depths_;  // a token tree's node depths
  // The logits land in the backend's host memory (pinned on a device: Backend::allocate_host),
  // grown when a step needs more, never shrunk; logits_ is the last run's part of it.
  std::unique_ptr<backend::Buffer> logits_buffer_;
  std::span<float> logits_;
  // Per logit row: its form, and for a Leading row the scale of its total (0: none).
  std::vector<uint8_t> row_forms_;
  std::vector<float> leading_scale_;
  std::vector<backend::RowArgmax> argmax_;
  std::vector<backend::RowLeading> leading_;
  // Per logit row: whether logits_ holds it (the backend wrote it, or whole_row brought it back).
  std::vector<uint8_t> row_present_;
  bool poison_reduced_rows_ = false;
  std::vector<float> unpoisoned_;       // the poisoned Leading rows' real logits, row after row
  std::vector<int64_t> unpoisoned_at_;  // per logit row: its place in unpoisoned_, or -1
  std::vector<int32_t> fetch_;          // bring_back's rows to copy from the backend
  uint64_t n_argmax_rows_ = 0;
  uint64_t n_leading_rows_ = 0;
  uint64_t n_rows_brought_back_ = 0;
  std::vector<model::ForwardBatch::ScoreRequest> scores_;
};

}  // namespace lumen::engine
