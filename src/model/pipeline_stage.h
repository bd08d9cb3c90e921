#pragma once
// Pipeline parallelism (issue 21): the model's layers cut into contiguous stages, each held by
// its own processes (with tensor parallelism, by a tensor-parallel group of them). A forward pass
// goes stage to stage as hidden states: the first stage embeds the tokens, each stage runs its
// layers and sends the result on, and the last sends the hidden states of the rows whose logits
// are wanted back to rank 0, which holds the output head and computes them. A batch of many
// rows is cut into micro-batches that follow each other through the stages, so that the first
// stage works on the second part while the next works on the first (model/micro_batches.h).
#include <cstdint>

namespace lumen::dist {
class Collectives;
}

namespace lumen::model {

struct LayerRange {
  uint64_t first = 0;
  uint64_t end = 0;  // one past the last
};

struct PipelineStage {
  int index = 0;  // 0 .. count - 1
  int count = 1;  // 1: the whole model runs here, and nothing below is used
  LayerRange layers;
  // A forward pass of many rows goes through in at most this many parts.
  int max_micro_batches = 1;
  // Every process of the model: hidden states go from stage to stage as point-to-point messages.
  dist::Collectives* comm = nullptr;
  int previous_rank = -1;  // comm rank the hidden states come from (-1: the first stage embeds)
  int next_rank = -1;      // comm rank they go to (-1: the last stage)
  // The last stage's process of tensor rank 0: sends the logit rows' hidden states to rank 0.
  bool returns_rows = false;
  int returning_rank = -1;  // rank 0: the comm rank that process has
};

// The layers of stage `index` of `count`: contiguous ranges as even as possible, the remainder
// on the later stages (the first also embeds tokens and computes logits). Throws lumen::Error
// when there are more stages than layers.
LayerRange stage_layers(uint64_t n_layers, int count, int index);

// Process `rank` of tensor_size x pipeline_size processes, ranked stage by stage (rank =
// stage * tensor_size + tensor rank): its stage, its layers and its neighbours, the processes of
// the same tensor rank on the stages before and after.
PipelineStage pipeline_stage_for(int rank, int tensor_size, int pipeline_size, uint64_t n_layers,
                                 int max_micro_batches, dist::Collectives* comm);

}  // namespace lumen::model
