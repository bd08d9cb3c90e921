// Transformer::forward under data-parallel attention (model/data_parallel_attention.h): this
// rank's sequences' rows through the whole model, the MoE layers exchanging rows with the other
// ranks, then every rank's logit rows gathered to rank 0, which samples them all.
#include <cstring>

#include "dist/collectives.h"
#include "model/data_parallel_attention.h"
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// What a rank other than 0 sends rank 0 after each step, before its logit rows: the bytes it
// moved and the token-layers they served since its last report, then its experts' load.
constexpr size_t kTrafficWords = 2;

}  // namespace

void Transformer::forward_data_parallel(const ForwardBatch& batch, KvCache& cache, float* logits) {
  const int rank = experts_.rank, size = experts_.size;
  const auto vocab = static_cast<size_t>(hp_.vocab_size);
  // Every rank's share: rank 0 places the others' logit rows and counts their attention rows.
  rank_rows_.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    select_rank_rows(batch, cache.layout().n_groups(), r, size, rank_rows_[static_cast<size_t>(r)]);
  }
  attention_rows_per_rank_.resize(static_cast<size_t>(size), 0);
  for (int r = 0; r < size; ++r)
    attention_rows_per_rank_[static_cast<size_t>(r)] += rank_rows_[static_cast<size_t>(r)].tokens.size();

  const RankRows& mine = rank_rows_[static_cast<size_t>(rank)];
  own_logits_.resize(mine.logit_rows.size() * vocab);
  if (!mine.tokens.empty()) {
    in_rank_rows_ = true;
    try {
      forward(mine.batch(), cache, own_logits_.data());
    } catch (...) {
      in_rank_rows_ = false;
      throw;
    }
    in_rank_rows_ = false;
  } else {
    // No rows here this step, but the MoE layers' exchanges need every rank.
    for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
      if (weights_.layers[layer].ffn_gate_inp) moe_->forward_no_rows(layer, weights_.layers[layer]);
    }
  }
  gather_logits(logits);
}

void Transformer::gather_logits(float* logits) {
  const int rank = experts_.rank, size = experts_.size;
  const auto vocab = static_cast<size_t>(hp_.vocab_size);
  ExpertLoad& load = moe_->mutable_load();
  ExpertParallelFfn& exchange = *moe_->mutable_expert_parallel();
  const auto per_rank = static_cast<size_t>(load.experts / size);
  const size_t load_words = static_cast<size_t>(load.layers) * per_rank;
  const size_t header_bytes = (kTrafficWords + load_words) * sizeof(uint64_t);
  std::vector<size_t> send_bytes(static_cast<size_t>(size), 0), receive_bytes(static_cast<size_t>(size), 0);
  if (rank != 0) {
    // The header, then the logit rows.
    gather_out_.resize(header_bytes + own_logits_.size() * sizeof(float));
    std::vector<uint64_t> header(kTrafficWords + load_words);
    header[0] = exchange.traffic().bytes;
    header[1] = exchange.traffic().token_layers;
    for (int64_t l = 0; l < load.layers; ++l) {
      for (size_t j = 0; j < per_rank; ++j) {
        header[kTrafficWords + static_cast<size_t>(l) * per_rank + j] =
            load.at(l, static_cast<int64_t>(static_cast<size_t>(rank) * per_rank + j));
      }
    }
    std::memcpy(gather_out_.data(), header.data(), header_bytes);
    std::memcpy(gather_out_.data() + header_bytes, own_logits_.data(), own_logits_.size() * sizeof(float));
    send_bytes[0] = gather_out_.size();
    // Reported: rank 0 keeps the totals.
    moe_->reset_load();
  } else {
    for (int r = 1; r < size; ++r) {
      receive_bytes[static_cast<size_t>(r)] =
          header_bytes + rank_rows_[static_cast<size_t>(r)].logit_rows.size() * vocab * sizeof(float);
    }
  }
  size_t total = 0;
  for (size_t b : receive_bytes) total += b;
  gather_in_.resize(total);
  experts_.comm->all_to_all(std::span<const std::byte>(gather_out_.data(), rank != 0 ? gather_out_.size() : 0),
                            send_bytes, gather_in_, receive_bytes);
  if (rank != 0) return;

  const auto place = [&](const RankRows& rows, const float* values) {
    if (logits == nullptr) return;
    for (size_t i = 0; i < rows.output_index.size(); ++i) {
      std::memcpy(logits + static_cast<size_t>(rows.output_index[i]) * vocab, values + i * vocab,
                  vocab * sizeof(float));
    }
  };
  place(rank_rows_[0], own_logits_.data());
  size_t at = 0;
  for (int r = 1; r < size; ++r) {
    std::vector<uint64_t> header(kTrafficWords + load_words);
    std::memcpy(header.data(), gather_in_.data() + at, header_bytes);
    exchange.add_traffic({header[0], header[1]});
    for (int64_t l = 0; l < load.layers; ++l) {
      for (size_t j = 0; j < per_rank; ++j) {
        load.tokens[static_cast<size_t>(l * load.experts) + static_cast<size_t>(r) * per_rank + j] +=
            header[kTrafficWords + static_cast<size_t>(l) * per_rank + j];
      }
    }
    const RankRows& rows = rank_rows_[static_cast<size_t>(r)];
    std::vector<float> values(rows.logit_rows.size() * vocab);
    std::memcpy(values.data(), gather_in_.data() + at + header_bytes, values.size() * sizeof(float));
    place(rows, values.data());
    at += receive_bytes[static_cast<size_t>(r)];
  }
}

}  // namespace lumen::model
