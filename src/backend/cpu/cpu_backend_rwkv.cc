// The CPU backend's RWKV 7 state update (Backend::rwkv_wkv7): the kernel of rwkv_wkv7.h (AVX2
// where the CPU has it) over the pool, one task per sequence and head. Sequences' states and
// rows are disjoint (the common checks), and a head writes only its own slice of the state and
// of out, so tasks never share memory they write.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/row_tasks.h"
#include "backend/cpu/rwkv7_rows.h"
#include "backend/cpu/rwkv_wkv7.h"

namespace lumen::backend {

void CpuBackend::do_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                              TensorView& out) {
  const int64_t heads = rows.r.dims[0] / head_size;
  const size_t stride = rows.r.row_bytes / sizeof(float), out_stride = out.row_bytes / sizeof(float);
  auto run = [&](int64_t task, unsigned) {
    const Wkv7Sequence& s = seqs[static_cast<size_t>(task / heads)];
    if (s.n_tokens == 0) return;
    cpu::Wkv7Task t;
    t.r = rows.r.row<const float>(s.first_token);
    t.w = rows.w.row<const float>(s.first_token);
    t.k = rows.k.row<const float>(s.first_token);
    t.v = rows.v.row<const float>(s.first_token);
    t.a = rows.a.row<const float>(s.first_token);
    t.b = rows.b.row<const float>(s.first_token);
    t.stride = stride;
    t.n = s.n_tokens;
    t.head_size = head_size;
    t.state = static_cast<float*>(s.state.data);
    t.out = out.row<float>(s.first_token);
    t.out_stride = out_stride;
    cpu::wkv7_head(t, task % heads);
  };
  const auto n_tasks = static_cast<int64_t>(seqs.size()) * heads;
  if (n_tasks <= 1 || pool_.size() == 1) {
    for (int64_t task = 0; task < n_tasks; ++task) run(task, 0);
    return;
  }
  pool_.parallel_for(n_tasks, run);
}

}  // namespace lumen::backend

// RWKV 7's element-wise ops: the row kernels of rwkv7_rows.h over the pool, kRwkvRowsPerTask
// rows a task (each row's values in the order the kernels take them: the same bits however the
// rows are shared out).
namespace lumen::backend {

namespace {

constexpr int64_t kRwkvRowsPerTask = 8;

template <typename Fn>
void for_rows(ThreadPool& pool, int64_t n, Fn fn) {
  cpu::for_row_tasks(pool, n, kRwkvRowsPerTask, fn);
}

const float* floats(const TensorView& t) { return static_cast<const float*>(t.data); }

}  // namespace

void CpuBackend::do_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps,
                               int64_t group, TensorView& out) {
  for_rows(pool_, x.rows(), [&](int64_t r) {
    for (int64_t at = 0; at < x.dims[0]; at += group) {
      cpu::rwkv7_normalize(x.row<const float>(r) + at, group, eps, floats(weight) + at, floats(bias) + at,
                           out.row<float>(r) + at);
    }
  });
}

void CpuBackend::do_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs,
                                      const TensorView& mixes, TensorView& out) {
  const int64_t n = x.rows(), width = x.dims[0];
  // The row each row mixes in: its sequence's previous row, or the shift row for its first.
  std::vector<const float*> before(static_cast<size_t>(n), nullptr);
  for (const TokenShiftSequence& s : seqs) {
    for (int64_t i = 0; i < s.n_tokens; ++i) {
      before[static_cast<size_t>(s.first_token + i)] =
          i == 0 ? floats(s.shift) : x.row<const float>(s.first_token + i - 1);
    }
  }
  for_rows(pool_, n, [&](int64_t t) {
    const float* prev = before[static_cast<size_t>(t)];
    if (prev == nullptr) return;  // a row no sequence owns
    const float* cur = x.row<const float>(t);
    for (int64_t m = 0; m < mixes.rows(); ++m) {
      float* dst = out.row<float>(m * n + t);
      const float* mix = mixes.row<const float>(m);
      for (int64_t c = 0; c < width; ++c) dst[c] = cur[c] + (prev[c] - cur[c]) * mix[c];
    }
  });
  // Once every mix has read the old shift rows, each sequence keeps its last row.
  for (const TokenShiftSequence& s : seqs) {
    if (s.n_tokens == 0) continue;
    std::copy_n(x.row<const float>(s.first_token + s.n_tokens - 1), width, static_cast<float*>(s.shift.data));
  }
}

void CpuBackend::do_rwkv7_activation(TensorView& x, Rwkv7Activation f) {
  for_rows(pool_, x.rows(), [&](int64_t r) {
    float* row = x.row<float>(r);
    for (int64_t c = 0; c < x.dims[0]; ++c) row[c] = cpu::rwkv7_activation(row[c], f);
  });
}

void CpuBackend::do_rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                                         const TensorView& v0) {
  for_rows(pool_, v.rows(), [&](int64_t t) {
    float* vr = v.row<float>(t);
    const float *mr = mix.row<const float>(t), *fr = first.row<const float>(t), *b = floats(v0);
    for (int64_t c = 0; c < v.dims[0]; ++c) vr[c] += (fr[c] - vr[c]) * cpu::rwkv7_sigmoid(mr[c] + b[c]);
  });
}

void CpuBackend::do_rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) {
  for_rows(pool_, rows.w.rows(), [&](int64_t t) {
    cpu::rwkv7_keys_row(rows.w.row<float>(t), rows.a.row<float>(t), rows.k.row<float>(t), rows.kk.row<float>(t),
                        rows.b.row<float>(t), weights, rows.w.dims[0], head_size);
  });
}

void CpuBackend::do_rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                                     const TensorView& g, const TensorView& r_k, int64_t head_size) {
  for_rows(pool_, out.rows(), [&](int64_t t) {
    cpu::rwkv7_bonus_gate_row(out.row<float>(t), r.row<const float>(t), k.row<const float>(t), v.row<const float>(t),
                              g.row<const float>(t), floats(r_k), out.dims[0], head_size);
  });
}

}  // namespace lumen::backend
