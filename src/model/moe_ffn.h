#pragma once
// The mixture-of-experts FFN of a model's layers: the router's matmul on the backend, its
// decision on the host (moe_router.h), and the chosen experts (plus a shared expert, when the
// architecture has one) run through Backend::moe_ffn, each expert once over all the tokens of
// the step routed to it. It also counts how many tokens each expert of each layer received
// (`lumen bench` reports it).
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/common/routed_expert_work.h"
#include "model/arch/block_features.h"
#include "model/expert_parallel_ffn.h"
#include "model/hparams.h"
#include "model/matmul_observer.h"
#include "model/moe_router.h"
#include "model/weights.h"

namespace lumen::model {

// Tokens routed to each expert of each layer since the last reset (a token counts once per
// layer for each of its experts; the shared expert is not counted).
struct ExpertLoad {
  int64_t layers = 0;
  int64_t experts = 0;
  std::vector<uint64_t> tokens;  // [layer * experts + expert]

  uint64_t at(int64_t layer, int64_t expert) const { return tokens[static_cast<size_t>(layer * experts + expert)]; }
};

class MoeFfn {
 public:
  // With an expert shard (experts.comm set): the layers' expert tensors hold this rank's share
  // of the experts only, and each forward exchanges rows with the other ranks
  // (model/expert_parallel_ffn.h); the load still counts every expert, every rank routing all.
  MoeFfn(backend::Backend& backend, const HParams& hp, const BlockFeatures& features, const ExpertShard& experts = {});

  // out (f32 {embedding, n}) = the layer's MoE FFN of h (its normed input, the same shape).
  // `out` is this object's own buffer, valid until the next call.
  const backend::TensorView& forward(size_t layer, const LayerWeights& w, const backend::TensorView& h);

  // Data-parallel attention, a step without rows of this rank's own: the layer's exchanges
  // still run (this rank's experts serve the other ranks' rows).
  void forward_no_rows(size_t layer, const LayerWeights& w);

  // The tokens each expert of each layer took since reset_load. Where the backend routes
  // (route_experts), its counts come back here when read: a copy each way.
  const ExpertLoad& load() const;
  // Buffers for batches of up to n rows, allocated before a step (Transformer::ensure_capacity),
  // so that a step allocates nothing.
  void reserve(int64_t n);
  // Whether forward routes on the backend, reading nothing on the host (a backend with
  // route_experts and moe_ffn_routed, no expert-parallel exchange, no observer): then a decode
  // step's MoE layers may be replayed from a recording (Transformer::replayable).
  bool routes_on_backend() const;
  // Before a step of n rows, outside it: the backend's counts drained if the step could take an
  // entry past kMaxRoutedBetweenDrains, so that nothing inside the step reads them back.
  void prepare_step(int64_t n);
  // A step of n rows was replayed from a recording: its layers' ops did not run on the host, so
  // its tokens are counted here (every layer's, an upper bound) towards the next drain.
  void count_replayed_step(int64_t n);
  // Data-parallel attention: the other ranks' counts (of their experts), gathered by rank 0.
  ExpertLoad& mutable_load() { return load_; }
  ExpertParallelFfn* mutable_expert_parallel() { return parallel_.get(); }
  void reset_load();
  // Expert parallelism's exchange (null in one process): its traffic and this rank's experts.
  const ExpertParallelFfn* expert_parallel() const { return parallel_.get(); }
  // `lumen imatrix`: the observer also sees the router, each chosen expert's three matrices (a
  // slice of the 3-D tensor, expert_matrix) with the rows routed to it, and the shared expert's.
  // The experts' inputs are gathered, and their GLU computed once more, only while one is set.
  void set_observer(MatmulObserver* observer) { observer_ = observer; }

 private:
  void ensure_capacity(int64_t n);
  void observe(const LayerWeights& w, const backend::TensorView& h, std::span<const backend::ExpertWork> work);
  // Each token's shared-expert weight (from its gate logit, or 1 without logits), for the
  // expert-parallel exchange.
  std::span<const float> shared_expert_weights(std::span<const float> shared_logits, int64_t n);
  // The path of a backend with route_experts and moe_ffn_routed: nothing comes to the host.
  const backend::TensorView& forward_routed_on_backend(size_t layer, const LayerWeights& w,
                                                       const backend::TensorView& h, const backend::TensorView& logits,
                                                       const backend::TensorView* shared_gate);
  // The layer's expert tensors; their biases' views (gpt-oss) live in expert_biases_ until the
  // next call.
  backend::RoutedExperts routed_experts(const LayerWeights& w, const backend::TensorView* shared_gate);
  void drain_device_counts() const;

  backend::Backend& backend_;
  RouterConfig router_;
  backend::Backend::Glu glu_;
  int64_t embedding_;
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  backend::TensorView logits_, shared_gate_, out_, result_;
  // Host-side state, reused step to step.
  std::vector<float> host_logits_, host_shared_gate_, host_bias_;
  Routing routing_;
  backend::common::RoutedExpertWork work_;  // the host routing as moe_ffn takes it
  std::vector<float> shared_weights_;
  // Routed on the backend: the choice (i32 ids, f32 weights, n_used per token) and the counts,
  // one f32 per (layer, expert), exact while below 2^24: drained into load_ when read, and
  // before a step or a forward could take an entry past kMaxRoutedBetweenDrains tokens (a step
  // replayed from a CUDA graph runs none of this: count_replayed_step counts its tokens).
  static constexpr int64_t kMaxRoutedBetweenDrains = int64_t{1} << 23;
  backend::TensorView chosen_experts_, chosen_weights_;
  std::array<backend::TensorView, 3> expert_biases_;  // gate, up, down: routed_experts' views
  std::unique_ptr<backend::Buffer> device_counts_;
  mutable int64_t routed_since_drain_ = 0;
  mutable std::vector<float> host_counts_;
  mutable ExpertLoad load_;
  MatmulObserver* observer_ = nullptr;
  std::unique_ptr<ExpertParallelFfn> parallel_;
  bool data_parallel_ = false;                              // data-parallel attention: forward_own_rows
  std::vector<std::unique_ptr<backend::Buffer>> observed_;  // gathered rows, gate and up outputs
  int64_t observed_capacity_ = 0;
};

}  // namespace lumen::model
