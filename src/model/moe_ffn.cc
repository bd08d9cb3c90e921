#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::model {

namespace {

using backend::TensorView;
using backend::first_rows;

}  // namespace

MoeFfn::MoeFfn(backend::Backend& backend, const HParams& hp, const BlockFeatures& features, const ExpertShard& experts)
    : backend_(backend),
      glu_(features.activation == Activation::GeGlu       ? backend::Backend::Glu::Geglu
           : features.activation == Activation::SwiGluOai ? backend::Backend::Glu::SwigluOai
                                                          : backend::Backend::Glu::Swiglu),
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
  if (device_counts_) {
    drain_device_counts();  // and drop what it read
    std::fill(load_.tokens.begin(), load_.tokens.end(), 0);
  }
  if (parallel_) parallel_->reset_traffic();
}

const ExpertLoad& MoeFfn::load() const {
  if (device_counts_ && routed_since_drain_ > 0) drain_device_counts();
  return load_;
}

// The backend's counts (f32, exact below 2^24) added to load_ and zeroed there: a copy each way,
// when the load is read and before any entry could pass 2^24.
void MoeFfn::drain_device_counts() const {
  const auto cells = static_cast<size_t>(load_.layers * load_.experts);
  host_counts_.resize(cells);
  TensorView counts = backend::f32_matrix(static_cast<float*>(device_counts_->data()), load_.experts, load_.layers);
  backend_.copy_to_host(counts, host_counts_.data());
  for (size_t i = 0; i < cells; ++i) load_.tokens[i] += static_cast<uint64_t>(host_counts_[i]);
  std::fill(host_counts_.begin(), host_counts_.end(), 0.0f);
  backend_.copy_from_host(host_counts_.data(), counts);
  routed_since_drain_ = 0;
}

bool MoeFfn::routes_on_backend() const {
  // Asked each call: what a backend declares may change (a test's set_composed_ops).
  return backend_.has_op(backend::OpKind::RouteExperts) && backend_.has_op(backend::OpKind::MoeFfnRouted) &&
         !parallel_ && observer_ == nullptr;
}

void MoeFfn::prepare_step(int64_t n) {
  if (device_counts_ && routed_since_drain_ + n * load_.layers > kMaxRoutedBetweenDrains) drain_device_counts();
}

void MoeFfn::count_replayed_step(int64_t n) { routed_since_drain_ += n * load_.layers; }

void MoeFfn::reserve(int64_t n) {
  ensure_capacity(n);
  if (!device_counts_) {
    // One f32 count per (layer, expert), for a backend that routes; a new buffer reads zero.
    device_counts_ = backend_.allocate(static_cast<size_t>(load_.layers * load_.experts) * sizeof(float));
  }
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
  chosen_weights_ = matrix(router_.n_used, n);
  chosen_experts_ = matrix(router_.n_used, n);  // i32 ids, 4 bytes each as f32's
  chosen_experts_.type = tensor::DType::I32;
}

const TensorView& MoeFfn::forward(size_t layer, const LayerWeights& w, const TensorView& h) {
  if (!w.ffn_gate_inp || !w.ffn_gate_exps || !w.ffn_up_exps || !w.ffn_down_exps) {
    fail("layer {}: a mixture-of-experts FFN without its router or experts", layer);
  }
  const bool shared = w.ffn_up_shexp.has_value();
  if (shared && (!w.ffn_gate_shexp || !w.ffn_down_shexp)) {
    fail("layer {}: a shared expert without its gate or down matrix", layer);
  }
  if (w.ffn_exp_probs_b && w.ffn_exp_probs_b->elements() != router_.n_experts) {
    fail("layer {}: exp_probs_b is not one bias per expert", layer);
  }
  const int64_t n = h.rows();
  ensure_capacity(n);
  TensorView logits = first_rows(logits_, n), shared_gate = first_rows(shared_gate_, n);

  // The router's logits (and the shared expert's gate) in one job over the same input.
  const backend::Backend::MatmulOutput router[] = {
      {&*w.ffn_gate_inp, &logits}, {w.ffn_gate_inp_shexp ? &*w.ffn_gate_inp_shexp : nullptr, &shared_gate}};
  backend_.matmul_same_input(h, std::span(router, w.ffn_gate_inp_shexp ? 2 : 1));
  if (w.ffn_gate_inp_b) backend_.add_row(logits, *w.ffn_gate_inp_b);  // gpt-oss: the router's bias
  if (routes_on_backend()) {
    return forward_routed_on_backend(layer, w, h, logits, w.ffn_gate_inp_shexp ? &shared_gate : nullptr);
  }

  // Routed on the host: the expert-parallel exchange and the observer need the choice there, as
  // does a backend without route_experts.
  host_logits_.resize(static_cast<size_t>(n * router_.n_experts));
  backend_.copy_to_host(logits, host_logits_.data());
  std::span<const float> selection_bias;
  if (w.ffn_exp_probs_b) {
    host_bias_.resize(static_cast<size_t>(router_.n_experts));
    backend_.copy_to_host(*w.ffn_exp_probs_b, host_bias_.data());
    selection_bias = host_bias_;
  }
  route_tokens(host_logits_, router_, routing_, selection_bias);
  std::span<const float> shared_logits;
  if (w.ffn_gate_inp_shexp) {
    host_shared_gate_.resize(static_cast<size_t>(n));
    backend_.copy_to_host(shared_gate, host_shared_gate_.data());
    shared_logits = host_shared_gate_;
  }
  uint64_t* counts = load_.tokens.data() + static_cast<size_t>(layer) * static_cast<size_t>(load_.experts);
  TensorView out = first_rows(out_, n);
  if (parallel_) {
    const std::span<const float> weights = shared ? shared_expert_weights(shared_logits, n) : std::span<const float>();
    if (data_parallel_) {
      // Each rank counts what its own experts took: no rank sees the others' routing.
      parallel_->forward_own_rows(w, h, routing_, weights, glu_, out, counts);
    } else {
      for (int32_t e : routing_.experts) ++counts[e];
      parallel_->forward(w, h, routing_, weights, glu_, out);
    }
    result_ = out;
    return result_;
  }
  const backend::RoutedExperts matrices = routed_experts(w, nullptr);
  const std::span<const backend::ExpertWork> work =
      work_.build(routing_.experts, routing_.weights, router_.n_used, matrices, shared_logits);
  for (int32_t e : routing_.experts) ++counts[e];
  if (observer_ != nullptr) observe(w, h, work);
  backend_.moe_ffn(h, work, work_.n_slots(), glu_, out);
  result_ = out;
  return result_;
}

// Routed on the backend (Backend::route_experts, moe_ffn_routed): the logits, the choice and the
// experts stay where the backend keeps them, and the choice is counted there.
const TensorView& MoeFfn::forward_routed_on_backend(size_t layer, const LayerWeights& w, const TensorView& h,
                                                    const TensorView& logits, const TensorView* shared_gate) {
  const int64_t n = h.rows();
  reserve(n);  // done before the step by the transformer: nothing to allocate here
  // Drained before any count could pass 2^24, where f32 stops counting by ones.
  if (routed_since_drain_ + n > kMaxRoutedBetweenDrains) drain_device_counts();
  routed_since_drain_ += n;
  TensorView counts = backend::f32_matrix(
      static_cast<float*>(device_counts_->data()) + layer * static_cast<size_t>(load_.experts), router_.n_experts, 1);
  TensorView experts = first_rows(chosen_experts_, n), weights = first_rows(chosen_weights_, n);
  backend_.route_experts(logits, w.ffn_exp_probs_b ? &*w.ffn_exp_probs_b : nullptr, router_, experts, weights, &counts);
  TensorView out = first_rows(out_, n);
  backend_.moe_ffn_routed(h, experts, weights, routed_experts(w, shared_gate), glu_, out);
  result_ = out;
  return result_;
}

backend::RoutedExperts MoeFfn::routed_experts(const LayerWeights& w, const TensorView* shared_gate) {
  backend::RoutedExperts m{&*w.ffn_gate_exps, &*w.ffn_up_exps, &*w.ffn_down_exps};
  if (w.ffn_gate_exps_b) {
    // The file's {width, experts} biases seen as {width, 1, experts}: expert e's is a 1-row matrix.
    const auto per_expert = [](const TensorView& b) {
      TensorView v = b;
      v.dims = {b.dims[0], 1, b.dims[1], 1};
      return v;
    };
    expert_biases_ = {per_expert(*w.ffn_gate_exps_b), per_expert(*w.ffn_up_exps_b), per_expert(*w.ffn_down_exps_b)};
    m.gate_bias = &expert_biases_[0];
    m.up_bias = &expert_biases_[1];
    m.down_bias = &expert_biases_[2];
  }
  if (w.ffn_up_shexp) {
    m.shared_gate = &*w.ffn_gate_shexp;
    m.shared_up = &*w.ffn_up_shexp;
    m.shared_down = &*w.ffn_down_shexp;
    if (w.ffn_gate_inp_shexp) m.shared_logit = shared_gate;
  }
  return m;
}

std::span<const float> MoeFfn::shared_expert_weights(std::span<const float> shared_logits, int64_t n) {
  shared_weights_.assign(static_cast<size_t>(n), 1.0f);
  for (size_t t = 0; t < shared_logits.size(); ++t)
    shared_weights_[t] = backend::routing::shared_expert_gate(shared_logits[t]);
  return shared_weights_;
}

// What each matrix of the layer multiplies, shown to the observer: the router and shared-expert
// gate see h; each expert (and the shared one) its rows of h for gate and up, and for down the
// GLU of those, computed here the way Backend::moe_ffn computes it.
void MoeFfn::observe(const LayerWeights& w, const TensorView& h, std::span<const backend::ExpertWork> work_list) {
  if (glu_ == backend::Backend::Glu::SwigluOai) {
    fail("lumen imatrix does not observe gpt-oss's experts yet (their biases and clamped SwiGLU)");
  }
  observer_->on_matmul(*w.ffn_gate_inp, h);
  if (w.ffn_gate_inp_shexp) observer_->on_matmul(*w.ffn_gate_inp_shexp, h);
  int64_t ff = 0;
  for (const backend::Backend::ExpertWork& work : work_list) ff = std::max(ff, work.gate->dims[1]);
  const int64_t n = h.rows();
  const int64_t need = std::max(embedding_, ff) * n;
  if (need > observed_capacity_) {
    observed_.clear();
    for (int i = 0; i < 3; ++i) observed_.push_back(backend_.allocate(static_cast<size_t>(need) * sizeof(float)));
    observed_capacity_ = need;
  }
  for (const backend::Backend::ExpertWork& work : work_list) {
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
