// The CPU backend's LayerNorm-block ops and an encoder's attention: the row kernels of
// layer_norm.h and bidirectional_attention.h over the pool (rows in tasks of kRowsPerTask;
// attention one task per sequence and query head). Tasks write disjoint rows or head slices.
#include <algorithm>

#include "backend/common/gelu_table.h"
#include "backend/cpu/bidirectional_attention.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cpu/row_tasks.h"

namespace lumen::backend {

namespace {

// Rows per task of the row-wise loops: enough work to outweigh a task's hand-out.
constexpr int64_t kRowsPerTask = 16;

template <typename Fn>
void for_each_row(ThreadPool& pool, int64_t rows, Fn fn) {
  cpu::for_row_tasks(pool, rows, kRowsPerTask, fn);
}

}  // namespace

void CpuBackend::do_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                               TensorView& out) {
  for_each_row(pool_, x.rows(), [&](int64_t r) {
    cpu::layer_norm_row(x.row<const float>(r), static_cast<const float*>(weight.data),
                        static_cast<const float*>(bias.data), eps, x.dims[0], out.row<float>(r));
  });
}

void CpuBackend::do_gelu_erf(TensorView& x) {
  for_each_row(pool_, x.rows(), [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = cpu::gelu_erf_value(row[c]);
  });
}

void CpuBackend::do_gelu_tanh(TensorView& x) {
  for_each_row(pool_, x.rows(), [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = common::gelu_tanh_like_ggml(row[c]);
  });
}

void CpuBackend::do_activation(TensorView& x, Activation kind) {
  for_each_row(pool_, x.rows(), [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = cpu::activation_value(kind, row[c]);
  });
}

void CpuBackend::do_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                            std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                            TensorView& out) {
  const int64_t heads = config.n_heads, group = config.n_heads / config.n_kv_heads, dim = config.head_dim;
  pool_.parallel_for(static_cast<int64_t>(seqs.size()) * heads, [&](int64_t task, unsigned) {
    const SequenceSlice& seq = seqs[static_cast<size_t>(task / heads)];
    const int64_t h = task % heads;
    std::vector<double> scores;
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      const int64_t row = seq.first_token + i;
      cpu::bidirectional_attention_head(q.row<const float>(row) + h * dim, k, v, seq.first_token, seq.n_tokens,
                                        (h / group) * dim, dim, config.scale, scores, out.row<float>(row) + h * dim);
    }
  });
}

}  // namespace lumen::backend
