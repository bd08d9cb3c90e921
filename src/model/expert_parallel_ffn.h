#pragma once
// One MoE layer under expert parallelism (model/expert_partition.h has the scheme): the rows of
// this rank's own tokens go to the ranks holding their experts and the weighted results come
// back through two all-to-alls, this rank's own tokens are summed in slot order with the
// shared expert last (the bits one process computes: Backend::moe_ffn adds slots the same way),
// and a third all-to-all hands every rank every token's sum. Host rows: the CPU backend only.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/expert_partition.h"
#include "model/moe_router.h"
#include "model/weights.h"

namespace lumen::dist {
class Collectives;
}

namespace lumen::model {

// This process's place among the processes that share a model's experts (size 1 with a comm:
// the same exchange through one process's collectives, which tests use).
struct ExpertShard {
  int rank = 0;
  int size = 1;
  dist::Collectives* comm = nullptr;  // null: experts are not shared, MoeFfn runs them all
  // Data-parallel attention (model/data_parallel_attention.h): each rank computes only its own
  // sequences' rows, so the MoE layers exchange rows with forward_own_rows.
  bool data_parallel_attention = false;
};

// What the exchanges cost, counted from the routing (every rank knows every rank's plan): bytes
// that crossed between different ranks, over every rank, and the token-layers they served.
struct ExchangeTraffic {
  uint64_t bytes = 0;
  uint64_t token_layers = 0;
};

class ExpertParallelFfn {
 public:
  ExpertParallelFfn(backend::Backend& backend, const ExpertShard& shard, int64_t n_experts, int64_t n_used,
                    int64_t embedding);

  // out (f32 {embedding, n}, h's shape) = the layer's MoE FFN of h from its routing (n tokens of
  // n_used entries); shared_weights: each token's shared-expert weight (empty: no shared expert).
  // The layer's expert tensors hold this rank's experts only.
  void forward(const LayerWeights& w, const backend::TensorView& h, const Routing& routing,
               std::span<const float> shared_weights, backend::Backend::Glu glu, backend::TensorView& out);

  // Data-parallel attention: out (f32 {embedding, n}) = the layer's MoE FFN of this rank's own n
  // rows (n may be 0: the rank still takes part in every exchange). Routing counts are exchanged
  // first (no rank sees another's rows), then each entry's row with its expert and weight goes
  // to the expert's rank and its result comes back; the owner sums in slot order, the shared
  // expert last, as one process does, and no sums move. `received` (per expert of the layer,
  // n_experts long) gains the entries this rank's experts took.
  void forward_own_rows(const LayerWeights& w, const backend::TensorView& h, const Routing& routing,
                        std::span<const float> shared_weights, backend::Backend::Glu glu, backend::TensorView& out,
                        uint64_t* received);

  const ExchangeTraffic& traffic() const { return traffic_; }
  // Data-parallel attention: the other ranks' traffic, which rank 0 gathers after each step.
  void add_traffic(const ExchangeTraffic& more) {
    traffic_.bytes += more.bytes;
    traffic_.token_layers += more.token_layers;
  }
  void reset_traffic() { traffic_ = {}; }
  const ExpertRange& experts() const { return experts_; }

 private:
  backend::TensorView rows(size_t index, int64_t n);
  // The received rows (in rows(0)) through this rank's experts into rows(1): row i's expert and
  // router weight are experts[i] and weights[i].
  void run_local_experts(const LayerWeights& w, std::span<const int32_t> experts, std::span<const float> weights,
                         backend::Backend::Glu glu);
  void count_traffic(const Routing& routing);
  // Tokens [first, first + count) of h, whose entries' expert results came back in returned_
  // (plan_.sent's order): each token's sum into out (count rows of embedding floats), slot by
  // slot (the first copied, the others added), the shared expert last when shared_weights (one
  // per token of h) is not empty: Backend::moe_ffn's order, so one process's bits.
  void sum_returned(const LayerWeights& w, const backend::TensorView& h, int64_t first, int64_t count,
                    std::span<const float> shared_weights, backend::Backend::Glu glu, float* out);

  backend::Backend& backend_;
  ExpertShard shard_;
  int64_t n_experts_, n_used_, embedding_;
  ExpertRange experts_;
  ExpertExchange plan_;
  // Backend buffers (rows the experts read and write), grown as needed: received rows, their
  // results, the shared expert's output.
  std::vector<std::unique_ptr<backend::Buffer>> buffers_{3};
  std::vector<int64_t> capacity_ = std::vector<int64_t>(3, 0);
  std::vector<float> sent_rows_, returned_, own_sums_;
  std::vector<int32_t> local_rows_, zero_slots_, place_;
  std::vector<int64_t> local_begin_;
  std::vector<float> local_weights_;
  std::vector<int32_t> received_experts_;
  std::vector<float> received_weights_;
  // forward_own_rows: the counts exchanged, and rows sent and received with their expert and
  // weight after them.
  std::vector<uint64_t> send_counts_, receive_counts_;
  std::vector<float> sent_meta_, received_meta_;
  std::vector<backend::TensorView> matrices_;
  std::vector<backend::Backend::ExpertWork> work_;
  ExchangeTraffic traffic_;
};

}  // namespace lumen::model
