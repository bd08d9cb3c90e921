#pragma once
// Tensor parallelism across processes (issue 21): rank 0 of the group runs everything a single
// process runs (the scheduler, the server, sampling) over its shard of the model, and sends each
// engine step to the other ranks, which only follow: they hold their shards of the weights and
// of the KV cache (model/tensor_shard.h), make the step's cache changes and run its forward pass
// (engine/shard_step.h), whose all-reduces meet rank 0's. Messages are broadcasts from rank 0
// through dist::Collectives: a header (what and how many bytes), then the bytes.
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "dist/collectives.h"
#include "engine/shard_step.h"
#include "lumen/engine_config.h"
#include "model/transformer.h"

namespace lumen::engine {

// The processes one model is spread over. On rank 0, going away tells the others to stop.
class TensorParallelGroup {
 public:
  explicit TensorParallelGroup(std::shared_ptr<dist::Collectives> comm);
  ~TensorParallelGroup();
  TensorParallelGroup(const TensorParallelGroup&) = delete;
  TensorParallelGroup& operator=(const TensorParallelGroup&) = delete;

  dist::Collectives& comm() { return *comm_; }
  // (shared: MPI is initialized once per process and finalized at its exit, so a process may
  // load a model, release it and load another)
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }

 private:
  friend class TensorParallelLeader;
  std::shared_ptr<dist::Collectives> comm_;
  bool engine_running_ = false;  // rank 0: the other ranks follow one engine at a time
};

// What the other ranks need to build their half of an engine's KV cache and swap space: the
// same blocks, each of their own heads.
struct ShardCacheGeometry {
  int64_t n_blocks = 0;
  int64_t block_size = 0;
  KvCacheDtype dtype = KvCacheDtype::F16;
  bool rotate = true;
  bool free_out_of_window = true;
  int64_t swap_slots = 0;  // 0: no swap space
};

// This process's place among `size` processes started by MPI (mpirun -np size). Throws
// lumen::Error when the size is not the number of processes MPI started, or the build has no MPI.
std::unique_ptr<TensorParallelGroup> join_tensor_parallel_group(int size);

// Rank 0's engine's side. Made with the engine (the other ranks build their cache), gone with it
// (they drop it). Throws lumen::Error when another engine of the model still runs.
class TensorParallelLeader {
 public:
  TensorParallelLeader(TensorParallelGroup& group, const ShardCacheGeometry& geometry);
  ~TensorParallelLeader();
  TensorParallelLeader(const TensorParallelLeader&) = delete;
  TensorParallelLeader& operator=(const TensorParallelLeader&) = delete;

  // Cache changes are recorded here as rank 0 makes them...
  ShardStepWriter& ops() { return ops_; }
  // ...and go to the other ranks with the step's forward pass (null: a step without one).
  void send_step(const model::ForwardBatch* batch);

 private:
  TensorParallelGroup& group_;
  ShardStepWriter ops_;
};

// Ranks other than 0: builds, steps and drops the KV cache of each of rank 0's engines in turn,
// on this rank's shard, until rank 0's group goes away. Throws lumen::Error when the messages or
// MPI fail; an error in one step (rank 0 meets the same one and carries on) is reported on
// stderr and the next step is awaited.
void follow_tensor_parallel_leader(TensorParallelGroup& group, model::Transformer& transformer,
                                   backend::Backend& backend);

}  // namespace lumen::engine
