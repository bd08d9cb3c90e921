#include "model/pooling.h"

#include <cmath>

#include "util/error.h"

namespace lumen::model {

std::string_view pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::None: return "none";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Rank: return "rank";
  }
  return "unknown";
}

Pooling embedding_pooling(const HParams& hp) {
  const auto pooling = static_cast<Pooling>(hp.pooling_type.value_or(0));
  switch (pooling) {
    case Pooling::Mean:
    case Pooling::Cls:
    case Pooling::Last: return pooling;
    case Pooling::None: return Pooling::Last;
    case Pooling::Rank: break;
  }
  fail("{}.pooling_type = {} ({}) is a reranker's: Lumen computes embeddings with mean, cls or last pooling only",
       hp.architecture, *hp.pooling_type, pooling_name(pooling));
}

std::vector<int32_t> pooled_rows(Pooling pooling, int64_t n_tokens) {
  if (n_tokens <= 0) fail("an embedding needs at least one token");
  if (pooling == Pooling::Cls) return {0};
  if (pooling == Pooling::Last) return {static_cast<int32_t>(n_tokens - 1)};
  std::vector<int32_t> rows(static_cast<size_t>(n_tokens));
  for (int64_t i = 0; i < n_tokens; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return rows;
}

std::vector<float> pool_and_normalize(Pooling pooling, std::span<const float> rows, int64_t width) {
  if (width <= 0 || rows.empty() || rows.size() % static_cast<size_t>(width) != 0) {
    fail("pooling: {} values are not whole rows of {}", rows.size(), width);
  }
  const size_t n_rows = rows.size() / static_cast<size_t>(width);
  if (pooling != Pooling::Mean && n_rows != 1) fail("pooling: {} reads one row, got {}", pooling_name(pooling), n_rows);
  // Summed in double: a long input's mean would otherwise lose the small rows' bits.
  std::vector<double> sum(static_cast<size_t>(width), 0.0);
  for (size_t r = 0; r < n_rows; ++r) {
    for (size_t c = 0; c < sum.size(); ++c) sum[c] += rows[r * sum.size() + c];
  }
  std::vector<float> out(sum.size());
  for (size_t c = 0; c < sum.size(); ++c) out[c] = static_cast<float>(sum[c] / static_cast<double>(n_rows));
  l2_normalize(out);
  return out;
}

void l2_normalize(std::span<float> v) {
  double squares = 0.0;
  for (float x : v) squares += static_cast<double>(x) * x;
  if (squares == 0.0) return;
  const double inverse = 1.0 / std::sqrt(squares);
  for (float& x : v) x = static_cast<float>(x * inverse);
}

}  // namespace lumen::model
