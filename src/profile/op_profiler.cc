#include "profile/op_profiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "backend/common/op_checks.h"
#include "util/error.h"

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

OpProfiler::OpProfiler(backend::Backend& backend, ThreadPool* pool) : backend_(backend), pool_(pool) {
  using backend::OpKind;
  // Every op is recorded under its name (an op added to the backend later too), but for
  // allocation and the step boundary, which are no work of the step's.
  plain_ops_.assign(backend::kOpKindCount, -1);
  for (size_t k = 0; k < plain_ops_.size(); ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (kind == OpKind::Allocate || kind == OpKind::UploadWeights || kind == OpKind::BeginStep ||
        kind == OpKind::EndStep) {
      continue;
    }
    plain_ops_[k] = intern(std::string(backend::op_name(kind)));
  }
  // Block moves (copy-on-write, swapping) are one kind of work for the report.
  const uint32_t moves = intern("kv_block_move");
  for (OpKind kind : {OpKind::CopyKvBlock, OpKind::CopyKvRow, OpKind::ReadKvBlock, OpKind::WriteKvBlock}) {
    plain_ops_[static_cast<size_t>(kind)] = moves;
  }
  if (pool_ != nullptr) {
    worker_spans_.resize(pool_->size());
    for (auto& spans : worker_spans_) spans.reserve(1 << 14);
  }
  on_device_ = backend_.device_memory().has_value();
  backend_.add_observer(this);
}

OpProfiler::~OpProfiler() {
  backend_.remove_observer(this);
  if (pool_ != nullptr) pool_->set_observer(nullptr);
}

void OpProfiler::name_weights(const gguf::GgufFile& file) {
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

uint32_t OpProfiler::intern(const std::string& name) {
  auto [it, added] = op_ids_.try_emplace(name, static_cast<uint32_t>(op_names_.size()));
  if (added) op_names_.push_back(name);
  return it->second;
}

const OpProfiler::Weight* OpProfiler::weight_at(const void* data) const {
  const auto address = reinterpret_cast<uintptr_t>(data);
  auto it = weights_.upper_bound(address);
  if (it == weights_.begin()) return nullptr;
  --it;
  return address < it->first + it->second.bytes ? &it->second : nullptr;
}

OpProfiler::WeightOp OpProfiler::weight_op(std::string_view kind, std::span<const TensorView* const> weights) {
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

void OpProfiler::start_recording() {
  step_ = StepRecording{};
  for (auto& spans : worker_spans_) spans.clear();
  part_ = kUnknownPart;
  depth_ = 0;
  op_clock_ = backend_.time_ops(true);
  recording_ = true;
  if (pool_ != nullptr) pool_->set_observer(this);
  step_.begin_ns = now_ns();
}

StepRecording OpProfiler::stop_recording() {
  step_.end_ns = now_ns();
  recording_ = false;
  if (op_clock_) {
    apply_op_clock(backend_.take_op_times());
    backend_.time_ops(false);
  }
  if (pool_ != nullptr) pool_->set_observer(nullptr);
  for (const auto& spans : worker_spans_) step_.spans.insert(step_.spans.end(), spans.begin(), spans.end());
  std::sort(step_.spans.begin(), step_.spans.end(),
            [](const WorkerSpan& a, const WorkerSpan& b) { return a.begin_ns < b.begin_ns; });
  return std::move(step_);
}

void OpProfiler::apply_op_clock(const std::vector<double>& marks) {
  if (step_.ops.empty()) return;
  if (marks.size() != 2 * step_.ops.size()) {
    fail("profile: the backend's op clock gave {} marks for {} ops", marks.size(), step_.ops.size());
  }
  // The marks count from the first op's start: lay them out from its host start.
  const int64_t anchor = step_.ops.front().begin_ns;
  for (size_t k = 0; k < step_.ops.size(); ++k) {
    step_.ops[k].begin_ns = anchor + std::llround(marks[2 * k]);
    step_.ops[k].end_ns = anchor + std::llround(marks[2 * k + 1]);
  }
  // On a device the step is its ops' span there; the host queued them beforehand, held back.
  if (on_device_) {
    step_.begin_ns = anchor;
    step_.end_ns = step_.ops.back().end_ns;
  }
}

void OpProfiler::on_worker_span(unsigned worker, int64_t begin_ns, int64_t end_ns, int64_t tasks) {
  if (worker < worker_spans_.size()) worker_spans_[worker].push_back(WorkerSpan{worker, begin_ns, end_ns, tasks});
}

int64_t OpProfiler::op_id(const backend::OpCall& call) {
  using backend::OpKind;
  auto named = [&](std::string_view kind, std::span<const TensorView* const> weights) {
    const WeightOp op = weight_op(kind, weights);
    if (op.part != kUnknownPart) part_ = op.part;
    return static_cast<int64_t>(op.name);
  };
  switch (call.kind) {
    case OpKind::Matmul: return named("matmul", std::span(call.in.data(), 1));
    case OpKind::MatmulSameInput: {
      // The same layer's outputs come in the same order every step (Q, K, V).
      const TensorView* weights[8] = {};
      const size_t n = std::min<size_t>(call.matmul_outputs.size(), 8);
      for (size_t i = 0; i < n; ++i) weights[i] = call.matmul_outputs[i].w;
      return named("matmul", std::span<const TensorView* const>(weights, n));
    }
    case OpKind::MatmulGlu:
      return named(call.glu == backend::Glu::Swiglu ? "matmul_swiglu" : "matmul_geglu", std::span(call.in.data(), 2));
    case OpKind::MoeFfn: {
      const TensorView* first[] = {call.experts.empty() ? nullptr : call.experts.front().gate};
      return named("moe_ffn", std::span<const TensorView* const>(first, call.experts.empty() ? 0 : 1));
    }
    case OpKind::MoeFfnRouted: {
      const TensorView* gate[] = {call.routed->gate};
      return named("moe_ffn", gate);
    }
    case OpKind::GetRows:
    case OpKind::RmsNorm:
    case OpKind::AddRmsNorm: {
      // A lookup's table and a norm's weight name their part: a layer's first op is its norm.
      const TensorView* named_by = call.kind == OpKind::GetRows   ? call.in[0]
                                   : call.kind == OpKind::RmsNorm ? call.in[1]
                                                                  : call.in[2];
      if (const Weight* w = weight_at(named_by->data); w != nullptr && w->part != kUnknownPart) part_ = w->part;
      return plain_ops_[static_cast<size_t>(call.kind)];
    }
    default: return plain_ops_[static_cast<size_t>(call.kind)];
  }
}

namespace {

// What the op moves and computes (op_cost.h), from its recorded arguments.
OpCost cost_of(const backend::OpCall& call) {
  using backend::OpKind;
  switch (call.kind) {
    case OpKind::CopyToHost: return OpCost{2.0 * static_cast<double>(call.in[0]->elements()) * 4.0, 0, false};
    case OpKind::Matmul: return matmul_cost(*call.in[0], *call.in[1], *call.out[0]);
    case OpKind::MatmulSameInput: return matmul_same_input_cost(*call.in[0], call.matmul_outputs);
    case OpKind::MatmulGlu: return matmul_glu_cost(*call.in[0], *call.in[1], *call.in[2], call.glu, *call.out[0]);
    case OpKind::MoeFfn: return moe_ffn_cost(*call.in[0], call.experts, *call.out[0]);
    case OpKind::MoeFfnRouted: return moe_ffn_routed_cost(*call.in[0], *call.in[1], *call.routed, *call.out[0]);
    case OpKind::GetRows: return get_rows_cost(*call.in[0], static_cast<int64_t>(call.indices.size()), *call.out[0]);
    case OpKind::RmsNorm: return rms_norm_cost(*call.in[0], *call.in[1]);
    case OpKind::Add: return elementwise_cost(*call.out[0], 2, 1.0);
    case OpKind::AddRmsNorm: {
      // The norm's traffic plus the add's: a and b read, the sum written (the norm reads it back
      // from cache), one addition per element.
      OpCost cost = rms_norm_cost(*call.in[0], *call.in[2]);
      cost += OpCost{2.0 * static_cast<double>(call.in[0]->elements()) * 4.0,
                     static_cast<double>(call.in[0]->elements()), false};
      return cost;
    }
    case OpKind::AddRow:
    case OpKind::Scale: return elementwise_cost(*call.out[0], 1, 1.0);
    case OpKind::Swiglu: return glu_cost(*call.in[0], backend::Glu::Swiglu);
    case OpKind::Geglu: return glu_cost(*call.in[0], backend::Glu::Geglu);
    case OpKind::RotateHeads: return rotate_heads_cost(*call.out[0], call.numbers[0]);
    case OpKind::Rope: return rope_cost(*call.out[0], *call.rope);
    case OpKind::StoreKv: return store_kv_cost(*call.in[0], *call.in[1], *call.cache);
    case OpKind::RopeStoreKv: {
      OpCost cost = rope_cost(*call.out[0], *call.rope);
      cost += rope_cost(*call.out[1], *call.rope);
      cost += store_kv_cost(backend::common::token_rows(*call.out[1]), *call.in[0], *call.cache);
      return cost;
    }
    case OpKind::Attention:
    case OpKind::AttentionScored: return attention_cost(*call.in[0], *call.cache, call.seqs, *call.attention);
    case OpKind::SsmConv: return ssm_conv_cost(*call.in[0], *call.in[1], call.ssm_seqs);
    case OpKind::SsmScan: return ssm_scan_cost(*call.in[0], *call.in[1], *call.in[2], *call.in[3], call.ssm_seqs);
    case OpKind::RwkvWkv7: return rwkv_wkv7_cost(*call.wkv7, call.numbers[0], call.wkv7_seqs);
    case OpKind::CopyKvBlock:
    case OpKind::ReadKvBlock:
    case OpKind::WriteKvBlock:
      return OpCost{
          2.0 * static_cast<double>(backend::kv_block_bytes(*call.cache) + backend::kv_value_block_bytes(*call.cache)),
          0, false};
    case OpKind::CopyKvRow:
      return OpCost{2.0 * static_cast<double>(call.cache->k.row_bytes + call.cache->v.row_bytes), 0, false};
    case OpKind::ShiftKeys:
      return OpCost{2.0 * static_cast<double>(call.indices.size() * backend::kv_block_bytes(*call.cache)), 0, false};
    default: return OpCost{};
  }
}

}  // namespace

// An op called from inside another (a composed op's parts) is the outer op's work: only the
// outermost is recorded.
void OpProfiler::before_op(const backend::OpCall& call) {
  if (!recording_ || depth_++ > 0) return;
  op_name_ = op_id(call);
  if (op_name_ >= 0 && op_clock_) backend_.mark_op_time();
  op_begin_ns_ = now_ns();
}

void OpProfiler::after_op(const backend::OpCall& call) {
  if (call.kind == backend::OpKind::UploadWeights && call.result != nullptr) {
    const TensorView& view = *call.result;
    weights_[reinterpret_cast<uintptr_t>(view.data)] =
        Weight{static_cast<size_t>(view.rows()) * view.row_bytes, call.host_in, {}, kUnknownPart};
  }
  if (!recording_ || --depth_ > 0 || op_name_ < 0) return;
  const int64_t end = now_ns();
  if (op_clock_) backend_.mark_op_time();
  step_.ops.push_back(OpRecord{static_cast<uint32_t>(op_name_), part_, op_begin_ns_, end, cost_of(call)});
  op_name_ = -1;
}

}  // namespace lumen::profile
