// ExpertParallelFfn::forward_own_rows: a MoE layer under expert parallelism when each rank holds
// only its own sequences' rows (data-parallel attention, model/data_parallel_attention.h).
#include <cstring>

#include "dist/collectives.h"
#include "model/expert_parallel_ffn.h"
#include "util/error.h"

namespace lumen::model {

namespace {

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

template <typename T>
std::span<std::byte> writable_bytes_of(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

// An entry's (expert, router weight), two 4-byte words, as the second exchange carries them.
constexpr size_t kMetaFloats = 2;

}  // namespace

void ExpertParallelFfn::forward_own_rows(const LayerWeights& w, const backend::TensorView& h, const Routing& routing,
                                         std::span<const float> shared_weights, backend::Backend::Glu glu,
                                         backend::TensorView& out, uint64_t* received) {
  const int64_t n = h.rows();
  const size_t row_bytes = static_cast<size_t>(embedding_) * sizeof(float);
  if (routing.experts.size() != static_cast<size_t>(n * n_used_) || out.rows() != n ||
      (n > 0 && (h.row_bytes != row_bytes || out.row_bytes != row_bytes))) {
    fail("expert parallelism: {} own rows routed as {} entries", n, routing.experts.size());
  }
  if (w.ffn_gate_exps->dims[2] != experts_.count) {
    fail("expert parallelism: a layer holding {} experts where this rank's share is {}", w.ffn_gate_exps->dims[2],
         experts_.count);
  }
  const auto size = static_cast<size_t>(shard_.size);
  const auto E = static_cast<size_t>(embedding_);
  dist::Collectives& comm = *shard_.comm;

  // This rank's entries grouped by the rank holding their expert, entry order within each.
  plan_.sent_rows.assign(size, 0);
  for (int32_t e : routing.experts) ++plan_.sent_rows[static_cast<size_t>(expert_owner(e, n_experts_, shard_.size))];
  std::vector<size_t> next(size, 0);
  for (size_t q = 1; q < size; ++q) next[q] = next[q - 1] + plan_.sent_rows[q - 1];
  plan_.sent.resize(routing.experts.size());
  for (size_t i = 0; i < routing.experts.size(); ++i) {
    plan_.sent[next[static_cast<size_t>(expert_owner(routing.experts[i], n_experts_, shard_.size))]++] =
        static_cast<int32_t>(i);
  }

  // 1. How many rows each rank will receive: nobody else sees this rank's routing.
  send_counts_.assign(plan_.sent_rows.begin(), plan_.sent_rows.end());
  receive_counts_.assign(size, 0);
  const std::vector<size_t> count_bytes(size, sizeof(uint64_t));
  comm.all_to_all(bytes_of(send_counts_), count_bytes, writable_bytes_of(receive_counts_), count_bytes);
  plan_.received_rows.assign(receive_counts_.begin(), receive_counts_.end());
  size_t n_received = 0;
  for (size_t c : plan_.received_rows) n_received += c;

  // 2. Each entry's row with its expert and weight after it (E + 2 words), one exchange: a
  // rendezvous of every rank costs more than the copies that pack and unpack them.
  const size_t packed = E + kMetaFloats;
  sent_meta_.resize(plan_.sent.size() * packed);
  for (size_t p = 0; p < plan_.sent.size(); ++p) {
    const auto entry = static_cast<size_t>(plan_.sent[p]);
    float* row = &sent_meta_[p * packed];
    std::memcpy(row, static_cast<const float*>(h.data) + entry / static_cast<size_t>(n_used_) * E, row_bytes);
    std::memcpy(row + E, &routing.experts[entry], sizeof(int32_t));
    row[E + 1] = routing.weights[entry];
  }
  received_meta_.resize(n_received * packed);
  comm.all_to_all(bytes_of(sent_meta_), segment_bytes(plan_.sent_rows, packed * sizeof(float)),
                  writable_bytes_of(received_meta_), segment_bytes(plan_.received_rows, packed * sizeof(float)));
  backend::TensorView x = rows(0, static_cast<int64_t>(n_received));
  received_experts_.resize(n_received);
  received_weights_.resize(n_received);
  for (size_t i = 0; i < n_received; ++i) {
    const float* row = &received_meta_[i * packed];
    std::memcpy(static_cast<float*>(x.data) + i * E, row, row_bytes);
    std::memcpy(&received_experts_[i], row + E, sizeof(int32_t));
    received_weights_[i] = row[E + 1];
    if (!experts_.holds(received_experts_[i])) fail("expert parallelism: a row for another rank's expert");
    ++received[received_experts_[i]];
  }
  run_local_experts(w, received_experts_, received_weights_, glu);

  // 3. The results back, landing in the order the rows left.
  returned_.resize(plan_.sent.size() * E);
  const backend::TensorView y = rows(1, static_cast<int64_t>(n_received));
  comm.all_to_all(std::span(static_cast<const std::byte*>(y.data), n_received * row_bytes),
                  segment_bytes(plan_.received_rows, row_bytes), writable_bytes_of(returned_),
                  segment_bytes(plan_.sent_rows, row_bytes));

  // What crossed to other ranks from here: rows and their (expert, weight) out, results back,
  // the counts.
  for (size_t q = 0; q < size; ++q) {
    if (static_cast<int>(q) == shard_.rank) continue;
    traffic_.bytes += plan_.sent_rows[q] * (row_bytes + kMetaFloats * sizeof(float)) +
                      plan_.received_rows[q] * row_bytes + sizeof(uint64_t);
  }
  traffic_.token_layers += static_cast<uint64_t>(n);
  if (n == 0) return;

  // The sums, on this rank: no sums move.
  sum_returned(w, h, 0, n, shared_weights, glu, static_cast<float*>(out.data));
}

}  // namespace lumen::model
