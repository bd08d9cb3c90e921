#include "backend/cpu/bidirectional_attention.h"

#include <algorithm>
#include <cmath>

namespace lumen::backend::cpu {

void bidirectional_attention_head(const float* q, const TensorView& k, const TensorView& v, int64_t first, int64_t n,
                                  int64_t kv_offset, int64_t head_dim, float scale, std::vector<double>& scores,
                                  float* out) {
  scores.resize(static_cast<size_t>(n));
  double most = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = k.row<const float>(first + j) + kv_offset;
    double dot = 0.0;
    for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * kj[d];
    scores[static_cast<size_t>(j)] = dot * scale;
    most = std::max(most, scores[static_cast<size_t>(j)]);
  }
  double sum = 0.0;
  for (double& s : scores) sum += (s = std::exp(s - most));
  for (int64_t d = 0; d < head_dim; ++d) {
    double acc = 0.0;
    for (int64_t j = 0; j < n; ++j)
      acc += scores[static_cast<size_t>(j)] * v.row<const float>(first + j)[kv_offset + d];
    out[d] = static_cast<float>(acc / sum);
  }
}

}  // namespace lumen::backend::cpu
