#include "backend/common/routed_expert_work.h"

#include "util/error.h"

namespace lumen::backend::common {

std::span<const ExpertWork> RoutedExpertWork::build(std::span<const int32_t> experts, std::span<const float> weights,
                                                    int64_t n_used, const RoutedExperts& m,
                                                    std::span<const float> shared_logits) {
  if (n_used <= 0 || experts.size() != weights.size() || experts.size() % static_cast<size_t>(n_used) != 0) {
    fail("moe_ffn_routed: {} experts and {} weights are not whole rows of {}", experts.size(), weights.size(), n_used);
  }
  const auto n = static_cast<int64_t>(experts.size()) / n_used;
  if (!shared_logits.empty() && shared_logits.size() != static_cast<size_t>(n)) {
    fail("moe_ffn_routed: {} shared-expert logits for {} rows", shared_logits.size(), n);
  }
  RouterConfig config;
  config.n_experts = m.gate->dims[2];
  config.n_used = n_used;
  routing_.experts.assign(experts.begin(), experts.end());
  routing_.weights.assign(weights.begin(), weights.end());
  group_by_expert(routing_, config, groups_);  // refuses an id outside [0, n_experts)

  const size_t n_groups = groups_.expert.size();
  const bool biased = m.gate_bias != nullptr;
  const size_t per_group = biased ? 6 : 3;  // gate, up, down, and their biases
  matrices_.resize(per_group * n_groups);
  work_.clear();
  for (size_t g = 0; g < n_groups; ++g) {
    const int64_t e = groups_.expert[g];
    TensorView* v = &matrices_[per_group * g];
    v[0] = expert_matrix(*m.gate, e);
    v[1] = expert_matrix(*m.up, e);
    v[2] = expert_matrix(*m.down, e);
    const auto begin = static_cast<size_t>(groups_.begin[g]);
    const auto size = static_cast<size_t>(groups_.begin[g + 1]) - begin;
    ExpertWork work{&v[0],
                    &v[1],
                    &v[2],
                    std::span(groups_.rows).subspan(begin, size),
                    std::span(groups_.slots).subspan(begin, size),
                    std::span(groups_.weights).subspan(begin, size)};
    if (biased) {
      v[3] = expert_matrix(*m.gate_bias, e);
      v[4] = expert_matrix(*m.up_bias, e);
      v[5] = expert_matrix(*m.down_bias, e);
      work.gate_bias = &v[3];
      work.up_bias = &v[4];
      work.down_bias = &v[5];
    }
    work_.push_back(work);
  }
  n_slots_ = n_used;
  if (m.shared_gate != nullptr) {
    // Every token, in the slot after its routed experts: added last, as llama.cpp adds it.
    all_rows_.resize(static_cast<size_t>(n));
    shared_slots_.assign(static_cast<size_t>(n), static_cast<int32_t>(n_used));
    shared_weights_.assign(static_cast<size_t>(n), 1.0f);
    for (int64_t t = 0; t < n; ++t) {
      all_rows_[static_cast<size_t>(t)] = static_cast<int32_t>(t);
      if (!shared_logits.empty()) {
        shared_weights_[static_cast<size_t>(t)] = routing::shared_expert_gate(shared_logits[static_cast<size_t>(t)]);
      }
    }
    work_.push_back({m.shared_gate, m.shared_up, m.shared_down, all_rows_, shared_slots_, shared_weights_});
    ++n_slots_;
  }
  return work_;
}

}  // namespace lumen::backend::common
