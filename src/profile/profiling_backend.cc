#include "profile/profiling_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace lumen::profile {

namespace {

using backend::TensorView;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "blk.12.attn_q.weight" -> layer 12; the embedding and the output head by their names.
int part_of_tensor(std::string_view name) {
  if (name.starts_with("token_embd")) return kEmbedding;
  if (name.starts_with("output")) return kHead;
  int layer = 0;
  if (std::sscanf(std::string(name).c_str(), "blk.%d.", &layer) == 1) return layer;
  return kUnknownPart;
}

// "blk.12.attn_q.weight" -> "attn_q".
std::string short_tensor_name(std::string_view name) {
  if (name.starts_with("blk.")) {
    const size_t dot = name.find('.', 4);
    if (dot != std::string_view::npos) name.remove_prefix(dot + 1);
  }
  if (name.ends_with(".weight")) name.remove_suffix(7);
  return std::string(name);
}

}  // namespace

std::string part_name(int part) {
  if (part >= 0) return fmt::format("layer {}", part);
  if (part == kEmbedding) return "embedding";
  if (part == kHead) return "head";
  return "other";
}

ProfilingBackend::ProfilingBackend(std::unique_ptr<backend::Backend> inner, ThreadPool* pool)
    : inner_(std::move(inner)), pool_(pool) {
  get_rows_ = intern("get_rows");
  rms_norm_ = intern("rms_norm");
  add_ = intern("add");
  add_row_ = intern("add_row");
  scale_ = intern("scale");
  swiglu_ = intern("swiglu");
  geglu_ = intern("geglu");
  rotate_heads_ = intern("rotate_heads");
  rope_ = intern("rope");
  store_kv_ = intern("store_kv");
  attention_ = intern("attention");
  copy_to_host_ = intern("copy_to_host");
  kv_block_move_ = intern("kv_block_move");
  shift_keys_ = intern("shift_keys");
  attention_scores_ = intern("attention_scores");
  gather_kv_rows_ = intern("gather_kv_rows");
  if (pool_ != nullptr) {
    worker_spans_.resize(pool_->size());
    for (auto& spans : worker_spans_) spans.reserve(1 << 14);
  }
}

ProfilingBackend::~ProfilingBackend() {
  if (pool_ != nullptr) pool_->set_observer(nullptr);
}

void ProfilingBackend::name_weights(const gguf::GgufFile& file) {
  std::unordered_map<const void*, const gguf::TensorInfo*> by_host;
  for (const gguf::TensorInfo& t : file.tensors()) by_host[t.data] = &t;
  for (auto& [begin, weight] : weights_) {
    auto it = by_host.find(weight.host);
    if (it == by_host.end()) continue;
    weight.name = it->second->name;
    weight.part = part_of_tensor(weight.name);
  }
  weight_ops_.clear();
}

uint32_t ProfilingBackend::intern(const std::string& name) {
  auto [it, added] = op_ids_.try_emplace(name, static_cast<uint32_t>(op_names_.size()));
  if (added) op_names_.push_back(name);
  return it->second;
}

const ProfilingBackend::Weight* ProfilingBackend::weight_at(const void* data) const {
  const auto address = reinterpret_cast<uintptr_t>(data);
  auto it = weights_.upper_bound(address);
  if (it == weights_.begin()) return nullptr;
  --it;
  return address < it->first + it->second.bytes ? &it->second : nullptr;
}

ProfilingBackend::WeightOp ProfilingBackend::weight_op(std::string_view kind,
                                                        std::span<const TensorView* const> weights) {
  const auto key = std::tuple{kind.data(), weights.empty() ? nullptr : weights.front()->data,
                              weights.empty() ? nullptr : weights.back()->data, weights.size()};
  auto cached = weight_ops_.find(key);
  if (cached != weight_ops_.end()) return cached->second;
  std::string label(kind);
  int part = kUnknownPart;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Weight* w = weight_at(weights[i]->data);
    std::string name = w != nullptr && !w->name.empty() ? w->name : "unnamed";
    // A tied output projection multiplies by the token embedding: it is the head's.
    int weight_part = w != nullptr ? w->part : kUnknownPart;
    if (kind == "matmul" && weight_part == kEmbedding) {
      weight_part = kHead;
      name = "output (tied " + short_tensor_name(name) + ")";
    }
    if (weight_part != kUnknownPart) part = weight_part;
    label += i == 0 ? ' ' : '+';
    label += short_tensor_name(name);
  }
  WeightOp op{intern(label), part};
  weight_ops_.emplace(key, op);
  return op;
}

template <typename Cost, typename Fn>
void ProfilingBackend::timed(uint32_t name, Cost&& cost, Fn&& fn) {
  if (!recording_) {
    fn();
    return;
  }
  const int64_t begin = now_ns();
  fn();
  const int64_t end = now_ns();
  step_.ops.push_back(OpRecord{name, part_, begin, end, cost()});
}

void ProfilingBackend::begin_step() {
  step_ = StepRecording{};
  for (auto& spans : worker_spans_) spans.clear();
  part_ = kUnknownPart;
  recording_ = true;
  if (pool_ != nullptr) pool_->set_observer(this);
  step_.begin_ns = now_ns();
}

StepRecording ProfilingBackend::end_step() {
  step_.end_ns = now_ns();
  recording_ = false;
  if (pool_ != nullptr) pool_->set_observer(nullptr);
  for (const auto& spans : worker_spans_) step_.spans.insert(step_.spans.end(), spans.begin(), spans.end());
  std::sort(step_.spans.begin(), step_.spans.end(),
            [](const WorkerSpan& a, const WorkerSpan& b) { return a.begin_ns < b.begin_ns; });
  return std::move(step_);
}

void ProfilingBackend::on_worker_span(unsigned worker, int64_t begin_ns, int64_t end_ns, int64_t tasks) {
  if (worker < worker_spans_.size()) worker_spans_[worker].push_back(WorkerSpan{worker, begin_ns, end_ns, tasks});
}

TensorView ProfilingBackend::upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) {
  TensorView view = inner_->upload_weights(type, dims, host_data);
  weights_[reinterpret_cast<uintptr_t>(view.data)] =
      Weight{static_cast<size_t>(view.rows()) * view.row_bytes, host_data, {}, kUnknownPart};
  return view;
}

void ProfilingBackend::copy_to_host(const TensorView& src, float* dst) {
  timed(copy_to_host_, [&] { return OpCost{2.0 * static_cast<double>(src.elements()) * 4.0, 0, false}; },
        [&] { inner_->copy_to_host(src, dst); });
}

void ProfilingBackend::matmul(const TensorView& w, const TensorView& x, TensorView& y) {
  const TensorView* weights[] = {&w};
  const WeightOp op = weight_op("matmul", weights);
  if (op.part != kUnknownPart) part_ = op.part;
  timed(op.name, [&] { return matmul_cost(w, x, y); }, [&] { inner_->matmul(w, x, y); });
}

void ProfilingBackend::matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) {
  // The same layer's outputs come in the same order every step (Q, K, V).
  const TensorView* weights[8] = {};
  const size_t n = std::min<size_t>(outputs.size(), 8);
  for (size_t i = 0; i < n; ++i) weights[i] = outputs[i].w;
  const WeightOp op = weight_op("matmul", std::span<const TensorView* const>(weights, n));
  if (op.part != kUnknownPart) part_ = op.part;
  timed(op.name, [&] { return matmul_same_input_cost(x, outputs); }, [&] { inner_->matmul_same_input(x, outputs); });
}

void ProfilingBackend::matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu,
                                  TensorView& gate, TensorView& up) {
  const TensorView* weights[] = {&gate_w, &up_w};
  const WeightOp op = weight_op(glu == Glu::Swiglu ? "matmul_swiglu" : "matmul_geglu", weights);
  if (op.part != kUnknownPart) part_ = op.part;
  timed(op.name, [&] { return matmul_glu_cost(gate_w, up_w, x, glu, gate); },
        [&] { inner_->matmul_glu(gate_w, up_w, x, glu, gate, up); });
}

void ProfilingBackend::moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                               TensorView& out) {
  const TensorView* first[] = {experts.empty() ? nullptr : experts.front().gate};
  const WeightOp op = weight_op("moe_ffn", std::span<const TensorView* const>(first, experts.empty() ? 0 : 1));
  if (op.part != kUnknownPart) part_ = op.part;
  timed(op.name, [&] { return moe_ffn_cost(x, experts, out); },
        [&] { inner_->moe_ffn(x, experts, n_slots, glu, out); });
}

void ProfilingBackend::get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) {
  if (const Weight* w = weight_at(table.data); w != nullptr && w->part != kUnknownPart) part_ = w->part;
  timed(get_rows_, [&] { return get_rows_cost(table, static_cast<int64_t>(ids.size()), out); },
        [&] { inner_->get_rows(table, ids, out); });
}

void ProfilingBackend::rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) {
  // A norm's weight names its part: a layer's first op is its attention norm.
  if (const Weight* w = weight_at(weight.data); w != nullptr && w->part != kUnknownPart) part_ = w->part;
  timed(rms_norm_, [&] { return rms_norm_cost(x, weight); }, [&] { inner_->rms_norm(x, weight, eps, out); });
}

void ProfilingBackend::add(const TensorView& a, const TensorView& b, TensorView& out) {
  timed(add_, [&] { return elementwise_cost(out, 2, 1.0); }, [&] { inner_->add(a, b, out); });
}

void ProfilingBackend::add_row(TensorView& x, const TensorView& row) {
  timed(add_row_, [&] { return elementwise_cost(x, 1, 1.0); }, [&] { inner_->add_row(x, row); });
}

void ProfilingBackend::scale(TensorView& x, float factor) {
  timed(scale_, [&] { return elementwise_cost(x, 1, 1.0); }, [&] { inner_->scale(x, factor); });
}

void ProfilingBackend::swiglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  timed(swiglu_, [&] { return glu_cost(gate, Glu::Swiglu); }, [&] { inner_->swiglu(gate, up, out); });
}

void ProfilingBackend::geglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  timed(geglu_, [&] { return glu_cost(gate, Glu::Geglu); }, [&] { inner_->geglu(gate, up, out); });
}

void ProfilingBackend::rotate_heads(TensorView& x, int64_t head_dim) {
  timed(rotate_heads_, [&] { return rotate_heads_cost(x, head_dim); }, [&] { inner_->rotate_heads(x, head_dim); });
}

void ProfilingBackend::rope(TensorView& x, std::span<const int32_t> positions, const backend::RopeConfig& config) {
  timed(rope_, [&] { return rope_cost(x, config); }, [&] { inner_->rope(x, positions, config); });
}

void ProfilingBackend::store_kv(const TensorView& k, const TensorView& v, std::span<const backend::SequenceSlice> seqs,
                                backend::KvLayer& cache) {
  timed(store_kv_, [&] { return store_kv_cost(k, v, cache); }, [&] { inner_->store_kv(k, v, seqs, cache); });
}

void ProfilingBackend::copy_kv_block(backend::KvLayer& cache, int64_t src, int64_t dst) {
  timed(kv_block_move_,
        [&] { return OpCost{2.0 * static_cast<double>(backend::kv_block_bytes(cache) + backend::kv_value_block_bytes(cache)), 0, false}; },
        [&] { inner_->copy_kv_block(cache, src, dst); });
}

void ProfilingBackend::read_kv_block(const backend::KvLayer& cache, int64_t block, void* host_k, void* host_v) {
  timed(kv_block_move_,
        [&] { return OpCost{2.0 * static_cast<double>(backend::kv_block_bytes(cache) + backend::kv_value_block_bytes(cache)), 0, false}; },
        [&] { inner_->read_kv_block(cache, block, host_k, host_v); });
}

void ProfilingBackend::write_kv_block(backend::KvLayer& cache, int64_t block, const void* host_k, const void* host_v) {
  timed(kv_block_move_,
        [&] { return OpCost{2.0 * static_cast<double>(backend::kv_block_bytes(cache) + backend::kv_value_block_bytes(cache)), 0, false}; },
        [&] { inner_->write_kv_block(cache, block, host_k, host_v); });
}

void ProfilingBackend::shift_keys(backend::KvLayer& cache, std::span<const int32_t> blocks, int32_t delta,
                                  const backend::RopeConfig& config, int64_t head_dim) {
  timed(shift_keys_,
        [&] { return OpCost{2.0 * static_cast<double>(blocks.size() * backend::kv_block_bytes(cache)), 0, false}; },
        [&] { inner_->shift_keys(cache, blocks, delta, config, head_dim); });
}

void ProfilingBackend::attention_scores(const TensorView& q, const backend::KvLayer& cache,
                                        const backend::SequenceSlice& seq, int64_t first_row,
                                        const backend::AttentionConfig& config, float* scores, int64_t slot_stride) {
  // Each scored row reads the keys it sees once (as attention's q.k does), f32 after widening.
  timed(
      attention_scores_,
      [&] {
        const double keys = static_cast<double>(seq.start_pos + seq.n_tokens);
        const double rows = static_cast<double>(seq.n_tokens - first_row);
        return OpCost{keys * static_cast<double>(cache.k.row_bytes),
                      2.0 * rows * keys * static_cast<double>(config.n_heads * config.head_dim), false};
      },
      [&] { inner_->attention_scores(q, cache, seq, first_row, config, scores, slot_stride); });
}

void ProfilingBackend::gather_kv_rows(backend::KvLayer& cache, std::span<const int32_t> src_table,
                                      std::span<const int32_t> dst_table, std::span<const int32_t> keep,
                                      int64_t head_dim, int64_t value_dim) {
  timed(
      gather_kv_rows_,
      [&] {
        return OpCost{4.0 * static_cast<double>(dst_table.size() * backend::kv_block_bytes(cache)), 0, false};
      },
      [&] { inner_->gather_kv_rows(cache, src_table, dst_table, keep, head_dim, value_dim); });
}

void ProfilingBackend::attention(const TensorView& q, const backend::KvLayer& cache,
                                 std::span<const backend::SequenceSlice> seqs, const backend::AttentionConfig& config,
                                 TensorView& out) {
  timed(attention_, [&] { return attention_cost(q, cache, seqs, config); },
        [&] { inner_->attention(q, cache, seqs, config, out); });
}

}  // namespace lumen::profile
