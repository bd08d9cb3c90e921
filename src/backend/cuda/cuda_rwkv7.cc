// CudaBackend's RWKV 7 ops (rwkv7.cu): rwkv_wkv7 and the element-wise rwkv7_* ops, declared only
// with CudaBackendOptions::rwkv7 (the common layer refuses them otherwise). The arguments were
// checked in front of every backend (common/wkv7_checks.h, rwkv7_checks.h); here only what the
// kernels add: device memory, the wkv7 kernel's head size, one stride where a kernel takes one.
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/rwkv7_kernels.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

const float* floats(const TensorView& t) { return static_cast<const float*>(t.data); }
float* floats(TensorView& t) { return static_cast<float*>(t.data); }

void require_devices(const CudaBackend::State& s, std::initializer_list<const TensorView*> tensors,
                     std::string_view op) {
  for (const TensorView* t : tensors) cuda::require_device(s, *t, op, "operands");
}

}  // namespace

void CudaBackend::do_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps,
                                int64_t group, TensorView& out) {
  State& s = *state_;
  require_devices(s, {&x, &weight, &bias, &out}, "rwkv7_norm");
  cuda::launch_rwkv7_norm(floats(x), cuda::stride_of(x), floats(weight), floats(bias), eps, group, floats(out),
                          cuda::stride_of(out), x.rows(), x.dims[0], s.stream);
  s.check_launch("rwkv7_norm");
}

void CudaBackend::do_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs,
                                       const TensorView& mixes, TensorView& out) {
  State& s = *state_;
  require_devices(s, {&x, &mixes, &out}, "rwkv7_token_shift");
  for (const TokenShiftSequence& q : seqs) cuda::require_device(s, q.shift, "rwkv7_token_shift", "shift rows");
  const int64_t n = x.rows();
  // One upload: each row's source (prev), each sequence's shift row and last row.
  std::vector<int32_t> prev(static_cast<size_t>(n), cuda::kNoSequence), last(seqs.size(), -1);
  std::vector<float*> shifts(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    const TokenShiftSequence& q = seqs[i];
    shifts[i] = static_cast<float*>(q.shift.data);
    for (int64_t t = 0; t < q.n_tokens; ++t) {
      prev[static_cast<size_t>(q.first_token + t)] =
          t == 0 ? -1 - static_cast<int32_t>(i) : static_cast<int32_t>(q.first_token + t - 1);
    }
    if (q.n_tokens > 0) last[i] = static_cast<int32_t>(q.first_token + q.n_tokens - 1);
  }
  const size_t prev_bytes = (prev.size() * sizeof(int32_t) + 15) & ~size_t{15};
  const size_t shift_bytes = shifts.size() * sizeof(float*);
  std::vector<uint8_t> blob(prev_bytes + shift_bytes + last.size() * sizeof(int32_t));
  std::memcpy(blob.data(), prev.data(), prev.size() * sizeof(int32_t));
  std::memcpy(blob.data() + prev_bytes, shifts.data(), shift_bytes);
  std::memcpy(blob.data() + prev_bytes + shift_bytes, last.data(), last.size() * sizeof(int32_t));
  const auto* base =
      static_cast<const uint8_t*>(s.uploads->upload(cuda::HostUploads::kRwkvRows, blob.data(), blob.size()));
  cuda::TokenShiftParams p;
  p.x = floats(x);
  p.x_stride = cuda::stride_of(x);
  p.mixes = floats(mixes);
  p.mix_stride = cuda::stride_of(mixes);
  p.n_mix = mixes.rows();
  p.out = floats(out);
  p.out_stride = cuda::stride_of(out);
  p.rows = n;
  p.width = x.dims[0];
  p.prev = reinterpret_cast<const int32_t*>(base);
  p.shift_rows = reinterpret_cast<float* const*>(base + prev_bytes);
  p.last_rows = reinterpret_cast<const int32_t*>(base + prev_bytes + shift_bytes);
  p.n_seqs = static_cast<int64_t>(seqs.size());
  cuda::launch_rwkv7_token_shift(p, s.stream);
  s.check_launch("rwkv7_token_shift");
}

void CudaBackend::do_rwkv7_activation(TensorView& x, Rwkv7Activation f) {
  State& s = *state_;
  require_devices(s, {&x}, "rwkv7_activation");
  cuda::launch_rwkv7_activation(floats(x), cuda::stride_of(x), x.rows(), x.dims[0], static_cast<int>(f), s.stream);
  s.check_launch("rwkv7_activation");
}

void CudaBackend::do_rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                                          const TensorView& v0) {
  State& s = *state_;
  require_devices(s, {&v, &first, &mix, &v0}, "rwkv7_value_residual");
  cuda::launch_rwkv7_value_residual(floats(v), cuda::stride_of(v), floats(first), cuda::stride_of(first), floats(mix),
                                    cuda::stride_of(mix), floats(v0), v.rows(), v.dims[0], s.stream);
  s.check_launch("rwkv7_value_residual");
}

void CudaBackend::do_rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) {
  State& s = *state_;
  require_devices(s,
                  {&rows.w, &rows.a, &rows.k, &rows.kk, &rows.b, &weights.w0, &weights.a0, &weights.k_k, &weights.k_a},
                  "rwkv7_keys");
  for (const TensorView* t : {&rows.a, &rows.k, &rows.kk, &rows.b}) {
    if (t->row_bytes != rows.w.row_bytes) fail("rwkv7_keys: the CUDA kernel needs the five rows of one stride");
  }
  cuda::Rwkv7KeysParams p;
  p.w = floats(rows.w);
  p.a = floats(rows.a);
  p.k = floats(rows.k);
  p.kk = floats(rows.kk);
  p.b = floats(rows.b);
  p.stride = cuda::stride_of(rows.w);
  p.w0 = floats(weights.w0);
  p.a0 = floats(weights.a0);
  p.k_k = floats(weights.k_k);
  p.k_a = floats(weights.k_a);
  p.rows = rows.w.rows();
  p.width = rows.w.dims[0];
  p.head_size = head_size;
  cuda::launch_rwkv7_keys(p, s.stream);
  s.check_launch("rwkv7_keys");
}

void CudaBackend::do_rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                                      const TensorView& g, const TensorView& r_k, int64_t head_size) {
  State& s = *state_;
  require_devices(s, {&out, &r, &k, &v, &g, &r_k}, "rwkv7_bonus_gate");
  for (const TensorView* t : {&k, &v, &g}) {
    if (t->row_bytes != r.row_bytes) fail("rwkv7_bonus_gate: the CUDA kernel needs r, k, v and g of one stride");
  }
  cuda::Rwkv7BonusGateParams p;
  p.out = floats(out);
  p.r = floats(r);
  p.k = floats(k);
  p.v = floats(v);
  p.g = floats(g);
  p.out_stride = cuda::stride_of(out);
  p.in_stride = cuda::stride_of(r);
  p.r_k = floats(r_k);
  p.rows = out.rows();
  p.width = out.dims[0];
  p.head_size = head_size;
  cuda::launch_rwkv7_bonus_gate(p, s.stream);
  s.check_launch("rwkv7_bonus_gate");
}

void CudaBackend::do_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                               TensorView& out) {
  State& s = *state_;
  require_devices(s, {&rows.r, &rows.w, &rows.k, &rows.v, &rows.a, &rows.b, &out}, "rwkv_wkv7");
  if (head_size > cuda::kWkv7HeadSize) {
    fail("rwkv_wkv7: the CUDA kernel takes heads of up to {} (RWKV 7's), not {}", cuda::kWkv7HeadSize, head_size);
  }
  std::vector<cuda::Wkv7SequenceRecord> records;
  records.reserve(seqs.size());
  for (const Wkv7Sequence& q : seqs) {
    cuda::require_device(s, q.state, "rwkv_wkv7", "a state");
    records.push_back({q.first_token, q.n_tokens, static_cast<float*>(q.state.data)});
  }
  if (records.empty()) return;
  cuda::Wkv7Params p;
  p.r = floats(rows.r);
  p.w = floats(rows.w);
  p.k = floats(rows.k);
  p.v = floats(rows.v);
  p.a = floats(rows.a);
  p.b = floats(rows.b);
  p.stride = cuda::stride_of(rows.r);
  p.out = floats(out);
  p.out_stride = cuda::stride_of(out);
  p.heads = rows.r.dims[0] / head_size;
  p.head_size = head_size;
  p.seqs = static_cast<const cuda::Wkv7SequenceRecord*>(s.uploads->upload(
      cuda::HostUploads::kRwkvSequences, records.data(), records.size() * sizeof(cuda::Wkv7SequenceRecord)));
  p.n_seqs = static_cast<int64_t>(records.size());
  cuda::launch_rwkv_wkv7(p, s.stream);
  s.check_launch("rwkv_wkv7");
}

}  // namespace lumen::backend
