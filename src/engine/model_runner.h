#pragma once
// Turns a step plan into one flat batch and runs it: the block moves first (swap out,
// copy-on-write, swap in; the order StepPlan documents), then
// a single forward pass over the scheduled tokens of every sequence (each attending through its
// own block table), with logits only for the chunks that sample.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "engine/swap_space.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace lumen::engine {

class ModelRunner {
 public:
  ModelRunner(model::Transformer& transformer, model::KvCache& cache, SwapSpace* swap = nullptr);

  // Returns one row of vocab logits per sampling chunk, in plan order (a view into a buffer
  // that the next call overwrites).
  std::span<const float> run(const StepPlan& plan);
  int64_t vocab_size() const { return vocab_; }

 private:
  model::Transformer& transformer_;
  model::KvCache& cache_;
  SwapSpace* swap_;
  int64_t vocab_;
  // Reused from step to step: after warm-up a step allocates nothing here.
  std::vector<int32_t> tokens_;
  std::vector<int32_t> positions_;
  std::vector<backend::SequenceSlice> slices_;
  std::vector<int32_t> logit_rows_;
  std::vector<float> logits_;
};

}  // namespace lumen::engine
