// The CPU backend's RWKV 7 state update (Backend::rwkv_wkv7): the kernel of rwkv_wkv7.h (AVX2
// where the CPU has it) over the pool, one task per sequence and head. Sequences' states and
// rows are disjoint (the common checks), and a head writes only its own slice of the state and
// of out, so tasks never share memory they write.
#include "backend/cpu/cpu_backend.h"
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
