#include "engine/model_parallel.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "dist/mpi_collectives.h"
#include "engine/kv_cache_dtype.h"
#include "engine/model_state.h"
#include "lumen/engine.h"
#include "kv/kv_layout.h"
#include "util/error.h"

namespace lumen::engine {

namespace {

enum class Message : uint64_t { BeginEngine = 1, Step, EndEngine, Shutdown };

struct Header {
  Message kind;
  uint64_t bytes;
};

template <typename T>
std::span<std::byte> bytes_of(T& value) {
  return {reinterpret_cast<std::byte*>(&value), sizeof(T)};
}

// Rank 0: a message to every other rank.
void send(dist::Collectives& comm, Message kind, std::span<const std::byte> payload = {}) {
  Header header{kind, payload.size()};
  comm.broadcast(bytes_of(header), 0);
  if (!payload.empty()) {
    // The broadcast's buffer is written on the other ranks only; rank 0's is sent as it is.
    comm.broadcast(std::span<std::byte>(const_cast<std::byte*>(payload.data()), payload.size()), 0);
  }
}

Header receive(dist::Collectives& comm, std::vector<std::byte>& payload) {
  Header header{};
  comm.broadcast(bytes_of(header), 0);
  payload.resize(header.bytes);
  if (header.bytes > 0) comm.broadcast(payload, 0);
  return header;
}

}  // namespace

std::unique_ptr<ModelParallelGroup> join_model_parallel_group(int tensor_size, int pipeline_size, int expert_size,
                                                              int context_size) {
  if (tensor_size < 1) fail("tensor_parallel_size must be at least 1 (got {})", tensor_size);
  if (pipeline_size < 1) fail("pipeline_parallel_size must be at least 1 (got {})", pipeline_size);
  if (expert_size < 1) fail("expert_parallel_size must be at least 1 (got {})", expert_size);
  if (context_size < 1) fail("context_parallel_size must be at least 1 (got {})", context_size);
  if (expert_size > 1 && (tensor_size > 1 || pipeline_size > 1)) {
    fail("expert parallelism does not combine with tensor or pipeline parallelism yet");
  }
  if (context_size > 1 && (tensor_size > 1 || pipeline_size > 1)) {
    fail("context parallelism (--context-parallel-size {}) does not combine with tensor or pipeline parallelism yet",
         context_size);
  }
  if (context_size > 1 && expert_size > 1) {
    fail("context parallelism (--context-parallel-size {}) does not combine with expert parallelism yet", context_size);
  }
  if (!dist::mpi_available()) {
    fail(
        "tensor, pipeline, expert and context parallelism need MPI, and this build has none (install libopenmpi-dev "
        "and rebuild)");
  }
  // Made once, kept to the process's exit (MPI cannot start again once finalized).
  static std::mutex made;
  static std::shared_ptr<dist::Collectives> world;
  std::shared_ptr<dist::Collectives> comm;
  {
    std::lock_guard lock(made);
    if (!world) world = dist::make_mpi_collectives(nullptr, nullptr);
    comm = world;
  }
  if (context_size > 1) {
    if (comm->size() != context_size) {
      fail(
          "context parallel size {} needs {} processes started together: run under `mpirun -np {}` (this run has "
          "{})",
          context_size, context_size, context_size, comm->size());
    }
    return std::make_unique<ModelParallelGroup>(std::move(comm), 1, 1, 1, context_size);
  }
  const int size = tensor_size * pipeline_size * expert_size;
  if (expert_size > 1 && comm->size() != size) {
    fail("expert parallel size {} needs {} processes started together: run under `mpirun -np {}` (this run has {})",
         expert_size, size, size, comm->size());
  }
  if (comm->size() != size) {
    fail("tensor parallel size {} x pipeline parallel size {} needs {} processes started together: run under "
         "`mpirun -np {}` (this run has {})",
         tensor_size, pipeline_size, size, size, comm->size());
  }
  return std::make_unique<ModelParallelGroup>(std::move(comm), tensor_size, pipeline_size, expert_size);
}

ModelParallelGroup::ModelParallelGroup(std::shared_ptr<dist::Collectives> comm, int tensor_size, int pipeline_size,
                                       int expert_size, int context_size)
    : comm_(std::move(comm)),
      tensor_size_(tensor_size),
      pipeline_size_(pipeline_size),
      expert_size_(expert_size),
      context_size_(context_size) {
  if (expert_size_ > 1 && (tensor_size_ > 1 || pipeline_size_ > 1)) {
    fail("expert parallelism does not combine with tensor or pipeline parallelism yet");
  }
  if (context_size_ > 1 &&
      (tensor_size_ != 1 || pipeline_size_ != 1 || expert_size_ != 1 || context_size_ != comm_->size())) {
    fail("context parallelism over {} of {} processes, with {} x {} x {} more", context_size_, comm_->size(),
         tensor_size_, pipeline_size_, expert_size_);
  }
  if (expert_size_ > 1) tensor_size_ = 1;  // every process is a stage of one of one
  if (context_size_ <= 1 && tensor_size_ * pipeline_size_ * expert_size_ != comm_->size()) {
    fail("{} x {} processes in a group of {}", tensor_size_, pipeline_size_, comm_->size());
  }
  if (pipeline_size_ > 1) tensor_comm_ = comm_->split(stage());
}

model::TensorShard ModelParallelGroup::shard() {
  if (tensor_size_ == 1) return {};
  return {tensor_rank(), tensor_size_, &tensor_comm()};
}

model::ExpertShard ModelParallelGroup::expert_shard() {
  if (expert_size_ == 1) return {};
  return {rank(), expert_size_, comm_.get(), data_parallel_attention_};
}

void ModelParallelGroup::set_data_parallel_attention(bool on) {
  if (on && expert_size_ <= 1) {
    fail("--data-parallel-attention needs expert parallelism (--expert-parallel-size 2 or more)");
  }
  data_parallel_attention_ = on;
}

model::ContextShare ModelParallelGroup::context() {
  if (context_size_ == 1) return {};
  return {rank(), context_size_, comm_.get()};
}

model::PipelineStage ModelParallelGroup::pipeline_stage(uint64_t n_layers, int max_micro_batches) {
  if (pipeline_size_ == 1) return {};
  return model::pipeline_stage_for(rank(), tensor_size_, pipeline_size_, n_layers, max_micro_batches, comm_.get());
}

ModelParallelGroup::~ModelParallelGroup() {
  if (comm_->rank() != 0 || comm_->size() == 1) return;
  try {
    send(*comm_, Message::Shutdown);
  } catch (const Error& e) {
    fmt::print(stderr, "model parallelism: could not release the other ranks: {}\n", e.what());
  }
}

ModelParallelLeader::ModelParallelLeader(ModelParallelGroup& group, const ShardCacheGeometry& geometry)
    : group_(group) {
  if (group.rank() != 0) fail("model parallelism: only rank 0 runs an engine (this is rank {})", group.rank());
  if (group.engine_running_) fail("model parallelism: one engine at a time per model (another one still runs)");
  ShardCacheGeometry copy = geometry;
  send(group.comm(), Message::BeginEngine, bytes_of(copy));
  group.engine_running_ = true;
}

ModelParallelLeader::~ModelParallelLeader() {
  group_.engine_running_ = false;
  try {
    send(group_.comm(), Message::EndEngine);
  } catch (const Error& e) {
    fmt::print(stderr, "model parallelism: could not end the other ranks' engine: {}\n", e.what());
  }
}

void ModelParallelLeader::send_step(const model::ForwardBatch* batch) {
  if (batch != nullptr) ops_.forward(*batch);
  if (!ops_.empty()) send(group_.comm(), Message::Step, ops_.bytes());
  ops_.clear();
}

void follow_model_parallel_leader(ModelParallelGroup& group, model::Transformer& transformer,
                                   backend::Backend& backend) {
  if (group.rank() == 0) fail("model parallelism: rank 0 leads; it does not follow");
  std::unique_ptr<model::KvCache> cache;
  std::unique_ptr<SwapSpace> swap;
  std::vector<std::byte> payload;
  for (;;) {
    const Header header = receive(group.comm(), payload);
    switch (header.kind) {
      case Message::BeginEngine: {
        ShardCacheGeometry g;
        if (payload.size() != sizeof(g)) fail("model parallelism: an engine description of {} bytes", payload.size());
        std::memcpy(&g, payload.data(), sizeof(g));
        swap.reset();
        cache.reset();
        cache = std::make_unique<model::KvCache>(backend, transformer.hparams(), transformer.kv_layout(g.free_out_of_window),
                                                 g.n_blocks, g.block_size, kv_tensor_type(g.dtype), g.rotate);
        if (g.swap_slots > 0) swap = std::make_unique<SwapSpace>(g.swap_slots, cache->block_host_bytes());
        break;
      }
      case Message::Step: {
        if (!cache) fail("model parallelism: a step before its engine");
        ShardTarget target{transformer, *cache, swap.get()};
        try {
          apply_shard_step(payload, target);
        } catch (const Error& e) {
          fmt::print(stderr, "model parallelism, rank {}: a step failed: {}\n", group.rank(), e.what());
        }
        break;
      }
      case Message::EndEngine:
        swap.reset();
        cache.reset();
        break;
      case Message::Shutdown:
        return;
      default:
        fail("model parallelism: unknown message {}", static_cast<uint64_t>(header.kind));
    }
  }
}

}  // namespace lumen::engine

namespace lumen {

void follow_model_parallel_leader(const Model& model) {
  engine::ModelState& state = engine::model_state(model);
  if (!state.parallel || state.parallel->rank() == 0) return;
  engine::follow_model_parallel_leader(*state.parallel, *state.model->transformer, *state.backend);
}

}  // namespace lumen
