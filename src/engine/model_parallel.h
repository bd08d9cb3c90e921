#pragma once
// One model spread over processes (issue 21): tensor parallelism (each layer's heads and FFN
// columns split by rank, model/tensor_shard.h), pipeline parallelism (the layers cut into
// stages, model/pipeline_stage.h), or both: tensor_size x pipeline_size processes, ranked stage
// by stage. Rank 0 runs everything a single process runs (the scheduler, the server, sampling)
// over its part of the model, and sends each engine step to the other ranks, which only follow:
// they hold their parts of the weights and of the KV cache, make the step's cache changes and
// run its forward pass (engine/shard_step.h), whose all-reduces and stage-to-stage messages meet
// rank 0's. Steps are broadcasts from rank 0 through dist::Collectives: a header (what and how
// many bytes), then the bytes.
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "dist/collectives.h"
#include "engine/shard_step.h"
#include "lumen/engine_config.h"
#include "model/transformer.h"

namespace lumen::engine {

// The processes one model is spread over. On rank 0, going away tells the others to stop.
class ModelParallelGroup {
 public:
  // `comm`: every process of the model, tensor_size x pipeline_size of them. Splits it into the
  // stages' tensor-parallel groups (a collective call: every process makes its group together).
  // expert_size > 1: expert parallelism over all of them instead (tensor and pipeline size 1);
  // context_size > 1 (context parallelism, model/context_chunks.h) likewise takes every process
  // of comm. At most one of the two is above 1.
  ModelParallelGroup(std::shared_ptr<dist::Collectives> comm, int tensor_size, int pipeline_size, int expert_size = 1,
                     int context_size = 1);
  ~ModelParallelGroup();
  ModelParallelGroup(const ModelParallelGroup&) = delete;
  ModelParallelGroup& operator=(const ModelParallelGroup&) = delete;

  // Every process (steps, stage to stage).
  dist::Collectives& comm() { return *comm_; }
  // The processes of this one's pipeline stage (tensor parallelism's all-reduces).
  dist::Collectives& tensor_comm() { return tensor_comm_ ? *tensor_comm_ : *comm_; }
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  int tensor_size() const { return tensor_size_; }
  int pipeline_size() const { return pipeline_size_; }
  int expert_size() const { return expert_size_; }
  int context_size() const { return context_size_; }
  int tensor_rank() const { return rank() % tensor_size_; }
  int stage() const { return expert_size_ > 1 || context_size_ > 1 ? 0 : rank() / tensor_size_; }

  // This process's part of a model (tensor shard and pipeline stage) of n_layers layers.
  model::TensorShard shard();
  model::PipelineStage pipeline_stage(uint64_t n_layers, int max_micro_batches);
  model::ExpertShard expert_shard();
  // Data-parallel attention beside expert parallelism (model/data_parallel_attention.h): each
  // rank runs attention and the dense parts for its own sequences only. Throws lumen::Error
  // without expert parallelism.
  void set_data_parallel_attention(bool on);
  bool data_parallel_attention() const { return data_parallel_attention_; }
  model::ContextShare context();

 private:
  friend class ModelParallelLeader;
  // (shared: MPI is initialized once per process and finalized at its exit, so a process may
  // load a model, release it and load another)
  std::shared_ptr<dist::Collectives> comm_;
  std::unique_ptr<dist::Collectives> tensor_comm_;  // null when there is one stage: comm_
  int tensor_size_ = 1;
  int pipeline_size_ = 1;
  int expert_size_ = 1;
  bool data_parallel_attention_ = false;
  int context_size_ = 1;
  bool engine_running_ = false;  // rank 0: the other ranks follow one engine at a time
};

// What the other ranks need to build their part of an engine's KV cache and swap space: the
// same blocks, each of their own heads and layers.
struct ShardCacheGeometry {
  int64_t n_blocks = 0;
  int64_t block_size = 0;
  KvCacheDtype dtype = KvCacheDtype::F16;
  bool rotate = true;
  bool free_out_of_window = true;
  int64_t swap_slots = 0;  // 0: no swap space
};

// This process's place among tensor_size x pipeline_size processes started by MPI (mpirun -np
// their product). Throws lumen::Error when that is not the number of processes MPI started, or
// the build has no MPI.
std::unique_ptr<ModelParallelGroup> join_model_parallel_group(int tensor_size, int pipeline_size, int expert_size = 1,
                                                              int context_size = 1);

// Rank 0's engine's side. Made with the engine (the other ranks build their cache), gone with it
// (they drop it). Throws lumen::Error when another engine of the model still runs.
class ModelParallelLeader {
 public:
  ModelParallelLeader(ModelParallelGroup& group, const ShardCacheGeometry& geometry);
  ~ModelParallelLeader();
  ModelParallelLeader(const ModelParallelLeader&) = delete;
  ModelParallelLeader& operator=(const ModelParallelLeader&) = delete;

  // Cache changes are recorded here as rank 0 makes them...
  ShardStepWriter& ops() { return ops_; }
  // ...and go to the other ranks with the step's forward pass (null: a step without one).
  void send_step(const model::ForwardBatch* batch);

 private:
  ModelParallelGroup& group_;
  ShardStepWriter ops_;
};

// Ranks other than 0: builds, steps and drops the KV cache of each of rank 0's engines in turn,
// on this rank's part of the model, until rank 0's group goes away. Throws lumen::Error when the messages or
// MPI fail; an error in one step (rank 0 meets the same one and carries on) is reported on
// stderr and the next step is awaited.
void follow_model_parallel_leader(ModelParallelGroup& group, model::Transformer& transformer,
                                   backend::Backend& backend);

}  // namespace lumen::engine
