#include "model/expert_parallel_ffn.h"

#include <cstring>

#include "dist/collectives.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using backend::TensorView;

std::span<const std::byte> bytes_of(const float* data, size_t floats) {
  return {reinterpret_cast<const std::byte*>(data), floats * sizeof(float)};
}

std::span<std::byte> writable_bytes_of(void* data, size_t floats) {
  return {static_cast<std::byte*>(data), floats * sizeof(float)};
}

}  // namespace

ExpertParallelFfn::ExpertParallelFfn(backend::Backend& backend, const ExpertShard& shard, int64_t n_experts,
                                     int64_t n_used, int64_t embedding)
    : backend_(backend),
      shard_(shard),
      n_experts_(n_experts),
      n_used_(n_used),
      embedding_(embedding),
      experts_(expert_range(n_experts, shard.rank, shard.size)) {
  if (shard_.comm == nullptr) fail("expert parallelism without collectives to exchange rows through");
  if (shard_.comm->size() != shard_.size || shard_.comm->rank() != shard_.rank) {
    fail("expert parallelism: rank {} of {}, but the collectives have rank {} of {}", shard_.rank, shard_.size,
         shard_.comm->rank(), shard_.comm->size());
  }
}

TensorView ExpertParallelFfn::rows(size_t index, int64_t n) {
  const int64_t need = std::max<int64_t>(n, 1);
  if (need > capacity_[index]) {
    buffers_[index] = backend_.allocate(static_cast<size_t>(need * embedding_) * sizeof(float));
    capacity_[index] = need;
  }
  return backend::f32_matrix(static_cast<float*>(buffers_[index]->data()), embedding_, n);
}

void ExpertParallelFfn::count_traffic(const Routing& routing) {
  const auto n = static_cast<int64_t>(routing.experts.size()) / n_used_;
  const size_t row_bytes = static_cast<size_t>(embedding_) * sizeof(float);
  for (int r = 0; r < shard_.size; ++r) {
    const TokenRange own = token_range(n, r, shard_.size);
    for (int64_t i = own.first * n_used_; i < (own.first + own.count) * n_used_; ++i) {
      // A row out and its result back, unless the expert is the token owner's own.
      if (expert_owner(routing.experts[static_cast<size_t>(i)], n_experts_, shard_.size) != r) {
        traffic_.bytes += 2 * row_bytes;
      }
    }
  }
  // The sums, each rank's to every other.
  traffic_.bytes += static_cast<uint64_t>(shard_.size - 1) * static_cast<uint64_t>(n) * row_bytes;
  traffic_.token_layers += static_cast<uint64_t>(n);
}

void ExpertParallelFfn::run_local_experts(const LayerWeights& w, std::span<const int32_t> experts,
                                          std::span<const float> weights, backend::Backend::Glu glu) {
  const auto received = static_cast<int64_t>(experts.size());
  if (received == 0) return;
  // The received rows grouped by local expert (a counting sort: row order within each), one
  // slot each, so each result row is its expert's output times the router's weight.
  local_begin_.assign(static_cast<size_t>(experts_.count) + 1, 0);
  for (int32_t expert : experts) {
    if (!experts_.holds(expert)) fail("expert parallelism: a row for expert {}, not this rank's", expert);
    ++local_begin_[static_cast<size_t>(expert - experts_.first) + 1];
  }
  for (int64_t e = 0; e < experts_.count; ++e) local_begin_[e + 1] += local_begin_[e];
  std::vector<int64_t> next(local_begin_.begin(), local_begin_.end() - 1);
  local_rows_.resize(static_cast<size_t>(received));
  local_weights_.resize(static_cast<size_t>(received));
  zero_slots_.assign(static_cast<size_t>(received), 0);
  for (int64_t i = 0; i < received; ++i) {
    const auto at = static_cast<size_t>(next[static_cast<size_t>(experts[static_cast<size_t>(i)] - experts_.first)]++);
    local_rows_[at] = static_cast<int32_t>(i);
    local_weights_[at] = weights[static_cast<size_t>(i)];
  }
  matrices_.resize(3 * static_cast<size_t>(experts_.count));
  work_.clear();
  for (int64_t e = 0; e < experts_.count; ++e) {
    const auto begin = static_cast<size_t>(local_begin_[static_cast<size_t>(e)]);
    const auto size = static_cast<size_t>(local_begin_[static_cast<size_t>(e) + 1]) - begin;
    if (size == 0) continue;
    TensorView* m = &matrices_[3 * static_cast<size_t>(e)];
    m[0] = backend::expert_matrix(*w.ffn_gate_exps, e);
    m[1] = backend::expert_matrix(*w.ffn_up_exps, e);
    m[2] = backend::expert_matrix(*w.ffn_down_exps, e);
    work_.push_back({&m[0], &m[1], &m[2], std::span(local_rows_).subspan(begin, size),
                     std::span(zero_slots_).subspan(begin, size), std::span(local_weights_).subspan(begin, size)});
  }
  TensorView x = rows(0, received), y = rows(1, received);
  backend_.moe_ffn(x, work_, 1, glu, y);
}

void ExpertParallelFfn::sum_returned(const LayerWeights& w, const TensorView& h, int64_t first, int64_t count,
                                     std::span<const float> shared_weights, backend::Backend::Glu glu, float* out) {
  if (count == 0) return;
  const auto E = static_cast<size_t>(embedding_);
  const size_t row_bytes = E * sizeof(float);
  const bool shared = !shared_weights.empty();
  TensorView shared_out;
  if (shared) {
    if (!w.ffn_gate_shexp || !w.ffn_up_shexp || !w.ffn_down_shexp) fail("a shared expert without its matrices");
    local_rows_.resize(static_cast<size_t>(count));
    for (int64_t t = 0; t < count; ++t) local_rows_[static_cast<size_t>(t)] = static_cast<int32_t>(first + t);
    zero_slots_.assign(static_cast<size_t>(count), 0);
    const backend::Backend::ExpertWork shared_work[] = {
        {&*w.ffn_gate_shexp, &*w.ffn_up_shexp, &*w.ffn_down_shexp, local_rows_, zero_slots_,
         shared_weights.subspan(static_cast<size_t>(first), static_cast<size_t>(count))}};
    shared_out = rows(2, h.rows());
    backend_.moe_ffn(h, shared_work, 1, glu, shared_out);
  }
  // place_[t * n_used + s]: where token first + t's slot s result lies in returned_.
  place_.resize(static_cast<size_t>(count * n_used_));
  for (size_t p = 0; p < plan_.sent.size(); ++p) {
    place_[static_cast<size_t>(plan_.sent[p] - first * n_used_)] = static_cast<int32_t>(p);
  }
  for (int64_t t = 0; t < count; ++t) {
    float* o = out + static_cast<size_t>(t) * E;
    for (int64_t s = 0; s < n_used_; ++s) {
      const float* p = returned_.data() + static_cast<size_t>(place_[static_cast<size_t>(t * n_used_ + s)]) * E;
      if (s == 0) {
        std::memcpy(o, p, row_bytes);
      } else {
        for (size_t c = 0; c < E; ++c) o[c] += p[c];
      }
    }
    if (shared) {
      const float* p = static_cast<const float*>(shared_out.data) + static_cast<size_t>(first + t) * E;
      for (size_t c = 0; c < E; ++c) o[c] += p[c];
    }
  }
}

void ExpertParallelFfn::forward(const LayerWeights& w, const TensorView& h, const Routing& routing,
                                std::span<const float> shared_weights, backend::Backend::Glu glu, TensorView& out) {
  const int64_t n = h.rows();
  const size_t row_bytes = static_cast<size_t>(embedding_) * sizeof(float);
  if (h.dims[0] != embedding_ || h.row_bytes != row_bytes || out.rows() != n || out.row_bytes != row_bytes ||
      routing.experts.size() != static_cast<size_t>(n * n_used_)) {
    fail("expert parallelism: {} rows of {} values routed as {} entries", n, h.dims[0], routing.experts.size());
  }
  if (w.ffn_gate_exps->dims[2] != experts_.count) {
    fail("expert parallelism: a layer holding {} experts where this rank's share is {}", w.ffn_gate_exps->dims[2],
         experts_.count);
  }
  plan_expert_exchange(routing, n_used_, n_experts_, shard_.rank, shard_.size, plan_);
  count_traffic(routing);
  dist::Collectives& comm = *shard_.comm;
  const auto E = static_cast<size_t>(embedding_);

  // Out: each own entry's token row to its expert's rank.
  sent_rows_.resize(plan_.sent.size() * E);
  gather_entry_rows(static_cast<const float*>(h.data), embedding_, plan_.sent, n_used_, sent_rows_.data());
  const auto received = static_cast<int64_t>(plan_.received.size());
  TensorView x = rows(0, received);
  comm.all_to_all(bytes_of(sent_rows_.data(), sent_rows_.size()), segment_bytes(plan_.sent_rows, row_bytes),
                  writable_bytes_of(x.data, plan_.received.size() * E), segment_bytes(plan_.received_rows, row_bytes));
  received_experts_.resize(plan_.received.size());
  received_weights_.resize(plan_.received.size());
  for (size_t i = 0; i < plan_.received.size(); ++i) {
    received_experts_[i] = routing.experts[static_cast<size_t>(plan_.received[i])];
    received_weights_[i] = routing.weights[static_cast<size_t>(plan_.received[i])];
  }
  run_local_experts(w, received_experts_, received_weights_, glu);

  // Back: each result to its token's rank, landing in the order the rows left.
  returned_.resize(plan_.sent.size() * E);
  const TensorView y = rows(1, received);
  comm.all_to_all(bytes_of(static_cast<const float*>(y.data), plan_.received.size() * E),
                  segment_bytes(plan_.received_rows, row_bytes), writable_bytes_of(returned_.data(), returned_.size()),
                  segment_bytes(plan_.sent_rows, row_bytes));

  const TokenRange own = token_range(n, shard_.rank, shard_.size);
  const auto own_floats = static_cast<size_t>(own.count) * E;
  own_sums_.resize(own_floats * static_cast<size_t>(shard_.size));
  sum_returned(w, h, own.first, own.count, shared_weights, glu, own_sums_.data());
  // Every rank's sums to every rank: the same rows sent to each, received in token order.
  for (int r = 1; r < shard_.size; ++r) {
    std::memcpy(own_sums_.data() + static_cast<size_t>(r) * own_floats, own_sums_.data(), own_floats * sizeof(float));
  }
  std::vector<size_t> send_bytes(static_cast<size_t>(shard_.size), own_floats * sizeof(float));
  std::vector<size_t> receive_bytes(static_cast<size_t>(shard_.size));
  for (int r = 0; r < shard_.size; ++r) {
    receive_bytes[static_cast<size_t>(r)] = static_cast<size_t>(token_range(n, r, shard_.size).count) * row_bytes;
  }
  comm.all_to_all(bytes_of(own_sums_.data(), own_sums_.size()), send_bytes,
                  writable_bytes_of(out.data, static_cast<size_t>(n) * E), receive_bytes);
}

}  // namespace lumen::model
