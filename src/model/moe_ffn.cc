#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::model {

namespace {

using backend::TensorView;
using backend::first_rows;


// llama.cpp's shared-expert gate: silu(g) / g, which is sigmoid(g) rounded as ggml rounds it
// (silu is g / (1 + exp(-g)) in f32); its limit 1/2 at g = 0, where the division has none.
float shared_expert_gate(float g) {
  if (g == 0.0f) return 0.5f;
  const float silu = g / (1.0f + std::exp(-g));
  return silu / g;
}

}  // namespace

MoeFfn::MoeFfn(backend::Backend& backend, const HParams& hp, const BlockFeatures& features, const ExpertShard& experts)
    : backend_(backend),
      glu_(features.activation == Activation::GeGlu ? backend::Backend::Glu::Geglu : backend::Backend::Glu::Swiglu),
      embedding_(static_cast<int64_t>(hp.embedding_length)) {
  router_.n_experts = static_cast<int64_t>(hp.expert_count);
  router_.n_used = static_cast<int64_t>(hp.expert_used_count);
  router_.gating = features.expert_gating;
  router_.normalize = features.expert_weights_norm;
  if (features.routing_from_file) {
    // llama.cpp's numbering; absent (0) means softmax for the files written before the key.
    router_.gating = hp.expert_gating_func == 2 ? ExpertGating::Sigmoid : ExpertGating::Softmax;
    router_.normalize = hp.expert_weights_norm.value_or(false);
  }
  router_.scale = static_cast<float>(hp.expert_weights_scale);
  router_.n_groups = static_cast<int64_t>(hp.expert_group_count);
  router_.n_groups_used = static_cast<int64_t>(hp.expert_group_used_count);
  if (router_.n_experts <= 0 || router_.n_used <= 0 || router_.n_used > router_.n_experts) {
    fail("{}: {} of {} experts per token", hp.architecture, router_.n_used, router_.n_experts);
  }
  load_.layers = static_cast<int64_t>(hp.block_count);
  load_.experts = router_.n_experts;
  load_.tokens.assign(static_cast<size_t>(load_.layers * load_.experts), 0);
  if (experts.comm != nullptr) {
    parallel_ = std::make_unique<ExpertParallelFfn>(backend_, experts, router_.n_experts, router_.n_used, embedding_);
    data_parallel_ = experts.data_parallel_attention;
  }
}

void MoeFfn::forward_no_rows(size_t layer, const LayerWeights& w) {
  if (!parallel_ || !data_parallel_) fail("layer {}: a MoE layer without rows outside data-parallel attention", layer);
  routing_.experts.clear();
  routing_.weights.clear();
  TensorView none = backend::f32_matrix(nullptr, embedding_, 0);
  uint64_t* counts = load_.tokens.data() + layer * static_cast<size_t>(load_.experts);
  parallel_->forward_own_rows(w, none, routing_, {}, glu_, none, counts);
}

void MoeFfn::reset_load() {
  std::fill(load_.tokens.begin(), load_.tokens.end(), 0);
  if (parallel_) parallel_->reset_traffic();
}

void MoeFfn::ensure_capacity(int64_t n) {
  if (n <= capacity_) return;
  capacity_ = n;
  buffers_.clear();
  auto matrix = [&](int64_t cols, int64_t rows) {
    buffers_.push_back(backend_.allocate(static_cast<size_t>(cols * rows) * sizeof(float)));
    return backend::f32_matrix(static_cast<float*>(buffers_.back()->data()), cols, rows);
  };
  logits_ = matrix(router_.n_experts, n);
  shared_gate_ = matrix(1, n);
  out_ = matrix(embedding_, n);
}

const TensorView& MoeFfn::forward(size_t layer, const LayerWeights& w, const TensorView& h) {
  if (!w.ffn_gate_inp || !w.ffn_gate_exps || !w.ffn_up_exps || !w.ffn_down_exps) {
    fail("layer {}: a mixture-of-experts FFN without its router or experts", layer);
  }
  const int64_t n = h.rows();
  ensure_capacity(n);
  TensorView logits = first_rows(logits_, n), shared_gate = first_rows(shared_gate_, n);

  // The router's logits (and the shared expert's gate) in one job over the same input.
  const backend::Backend::MatmulOutput router[] = {
      {&*w.ffn_gate_inp, &logits}, {w.ffn_gate_inp_shexp ? &*w.ffn_gate_inp_shexp : nullptr, &shared_gate}};
  backend_.matmul_same_input(h, std::span(router, w.ffn_gate_inp_shexp ? 2 : 1));
  host_logits_.resize(static_cast<size_t>(n * router_.n_experts));
  backend_.copy_to_host(logits, host_logits_.data());
  std::span<const float> selection_bias;
  if (w.ffn_exp_probs_b) {
    if (w.ffn_exp_probs_b->elements() != router_.n_experts) fail("layer {}: exp_probs_b is not one bias per expert", layer);
    host_bias_.resize(static_cast<size_t>(router_.n_experts));
    backend_.copy_to_host(*w.ffn_exp_probs_b, host_bias_.data());
    selection_bias = host_bias_;
  }
  route_tokens(host_logits_, router_, routing_, selection_bias);
  uint64_t* counts = load_.tokens.data() + static_cast<size_t>(layer) * static_cast<size_t>(load_.experts);
  const bool shared = w.ffn_up_shexp.has_value();
  if (shared && (!w.ffn_gate_shexp || !w.ffn_down_shexp)) {
    fail("layer {}: a shared expert without its gate or down matrix", layer);
  }
  if (shared) shared_expert_weights(w, shared_gate, n);
  TensorView out = first_rows(out_, n);
  if (parallel_ && data_parallel_) {
    // Each rank counts what its own experts took: no rank sees the others' routing.
    parallel_->forward_own_rows(
        w, h, routing_, shared ? std::span<const float>(shared_weights_) : std::span<const float>(), glu_, out, counts);
    result_ = out;
    return result_;
  }
  if (parallel_) {
    for (int32_t e : routing_.experts) ++counts[e];
    parallel_->forward(w, h, routing_, shared ? std::span<const float>(shared_weights_) : std::span<const float>(),
                       glu_, out);
    result_ = out;
    return result_;
  }
  group_by_expert(routing_, router_, groups_);

  const size_t n_groups = groups_.expert.size();
  matrices_.resize(3 * n_groups);
  work_.clear();
  for (size_t g = 0; g < n_groups; ++g) {
    const int64_t e = groups_.expert[g];
    matrices_[3 * g] = backend::expert_matrix(*w.ffn_gate_exps, e);
    matrices_[3 * g + 1] = backend::expert_matrix(*w.ffn_up_exps, e);
    matrices_[3 * g + 2] = backend::expert_matrix(*w.ffn_down_exps, e);
    const auto begin = static_cast<size_t>(groups_.begin[g]);
    const auto size = static_cast<size_t>(groups_.begin[g + 1]) - begin;
    counts[e] += size;
    work_.push_back({&matrices_[3 * g], &matrices_[3 * g + 1], &matrices_[3 * g + 2],
                     std::span(groups_.rows).subspan(begin, size), std::span(groups_.slots).subspan(begin, size),
                     std::span(groups_.weights).subspan(begin, size)});
  }
  if (shared) {
    // Every token, in the slot after its routed experts: added last, as llama.cpp adds it.
    all_rows_.resize(static_cast<size_t>(n));
    shared_slots_.assign(static_cast<size_t>(n), static_cast<int32_t>(router_.n_used));
    for (int64_t t = 0; t < n; ++t) all_rows_[static_cast<size_t>(t)] = static_cast<int32_t>(t);
    work_.push_back(
        {&*w.ffn_gate_shexp, &*w.ffn_up_shexp, &*w.ffn_down_shexp, all_rows_, shared_slots_, shared_weights_});
  }
  if (observer_ != nullptr) observe(w, h);
  const int64_t n_slots = router_.n_used + (shared ? 1 : 0);
  backend_.moe_ffn(h, work_, n_slots, glu_, out);
  result_ = out;
  return result_;
}

void MoeFfn::shared_expert_weights(const LayerWeights& w, const TensorView& shared_gate, int64_t n) {
  shared_weights_.assign(static_cast<size_t>(n), 1.0f);
  if (!w.ffn_gate_inp_shexp) return;
  host_shared_gate_.resize(static_cast<size_t>(n));
  backend_.copy_to_host(shared_gate, host_shared_gate_.data());
  for (int64_t t = 0; t < n; ++t) {
    shared_weights_[static_cast<size_t>(t)] = shared_expert_gate(host_shared_gate_[static_cast<size_t>(t)]);
  }
}

// What each matrix of the layer multiplies, shown to the observer: the router and shared-expert
// gate see h; each expert (and the shared one) its rows of h for gate and up, and for down the
// GLU of those, computed here the way Backend::moe_ffn computes it.
void MoeFfn::observe(const LayerWeights& w, const TensorView& h) {
  observer_->on_matmul(*w.ffn_gate_inp, h);
  if (w.ffn_gate_inp_shexp) observer_->on_matmul(*w.ffn_gate_inp_shexp, h);
  int64_t ff = 0;
  for (const backend::Backend::ExpertWork& work : work_) ff = std::max(ff, work.gate->dims[1]);
  const int64_t n = h.rows();
  const int64_t need = std::max(embedding_, ff) * n;
  if (need > observed_capacity_) {
    observed_.clear();
    for (int i = 0; i < 3; ++i) observed_.push_back(backend_.allocate(static_cast<size_t>(need) * sizeof(float)));
    observed_capacity_ = need;
  }
  for (const backend::Backend::ExpertWork& work : work_) {
    const auto rows = static_cast<int64_t>(work.rows.size());
    TensorView x = backend::f32_matrix(static_cast<float*>(observed_[0]->data()), embedding_, rows);
    TensorView gate = backend::f32_matrix(static_cast<float*>(observed_[1]->data()), work.gate->dims[1], rows);
    TensorView up = backend::f32_matrix(static_cast<float*>(observed_[2]->data()), work.up->dims[1], rows);
    backend_.get_rows(h, work.rows, x);
    observer_->on_matmul(*work.gate, x);
    observer_->on_matmul(*work.up, x);
    backend_.matmul_glu(*work.gate, *work.up, x, glu_, gate, up);
    observer_->on_matmul(*work.down, gate);
  }
}

}  // namespace lumen::model
