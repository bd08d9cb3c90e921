#include "model/pipeline_stage.h"

#include "util/error.h"

namespace lumen::model {

LayerRange stage_layers(uint64_t n_layers, int count, int index) {
  if (count < 1 || index < 0 || index >= count) fail("pipeline stage {} of {}", index, count);
  const auto stages = static_cast<uint64_t>(count);
  if (stages > n_layers) fail("pipeline parallel size {} is more than the model's {} layers", count, n_layers);
  const uint64_t base = n_layers / stages, extra = n_layers % stages;
  // Stages count - extra .. count - 1 hold base + 1 layers.
  const auto i = static_cast<uint64_t>(index);
  const uint64_t lighter = stages - extra;
  const uint64_t first = i * base + (i > lighter ? i - lighter : 0);
  return {first, first + base + (i >= lighter ? 1 : 0)};
}

PipelineStage pipeline_stage_for(int rank, int tensor_size, int pipeline_size, uint64_t n_layers,
                                 int max_micro_batches, dist::Collectives* comm) {
  if (tensor_size < 1 || pipeline_size < 1 || rank < 0 || rank >= tensor_size * pipeline_size) {
    fail("process {} of {} x {}", rank, tensor_size, pipeline_size);
  }
  if (max_micro_batches < 1) fail("pipeline micro-batches must be at least 1 (got {})", max_micro_batches);
  PipelineStage stage;
  stage.index = rank / tensor_size;
  stage.count = pipeline_size;
  stage.layers = stage_layers(n_layers, pipeline_size, stage.index);
  stage.max_micro_batches = max_micro_batches;
  stage.comm = comm;
  const int tensor_rank = rank % tensor_size;
  if (stage.index > 0) stage.previous_rank = rank - tensor_size;
  if (stage.index + 1 < pipeline_size) stage.next_rank = rank + tensor_size;
  stage.returns_rows = pipeline_size > 1 && stage.index + 1 == pipeline_size && tensor_rank == 0;
  if (rank == 0 && pipeline_size > 1) stage.returning_rank = (pipeline_size - 1) * tensor_size;
  return stage;
}

}  // namespace lumen::model
