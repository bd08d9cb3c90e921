// The CUDA backend's state-space ops (Backend::ssm_conv, ssm_scan; Mamba 2): the arguments were
// checked in front of every backend (common/ssm_checks.h); here only what the kernels add
// (device memory, the scan's state size), then one upload of the sequences' descriptors and one
// launch. The arithmetic is ssm_math.h's, which tests/unit/cuda_host runs against the CPU.
#include <vector>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/ssm_kernels.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

// The sequences as the kernels read them, on the device (valid for work queued after this).
const cuda::SsmSeqDesc* upload_sequences(CudaBackend::State& s, std::span<const SsmSequence> seqs, bool conv,
                                         std::string_view op) {
  std::vector<cuda::SsmSeqDesc> descs;
  descs.reserve(seqs.size());
  for (const SsmSequence& q : seqs) {
    const TensorView& state = conv ? q.conv_window : q.state;
    cuda::require_device(s, state, op, conv ? "conv_window" : "state");
    descs.push_back({q.first_token, q.n_tokens, conv ? static_cast<float*>(state.data) : nullptr,
                     conv ? nullptr : static_cast<float*>(state.data)});
  }
  return static_cast<const cuda::SsmSeqDesc*>(
      s.uploads->upload(cuda::HostUploads::kSsmSequences, descs.data(), descs.size() * sizeof(cuda::SsmSeqDesc)));
}

}  // namespace

void CudaBackend::do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                              std::span<const SsmSequence> seqs, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&x, &weight, &bias, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "ssm_conv", "operands");
  }
  if (seqs.empty() || x.rows() == 0) return;
  const cuda::SsmSeqDesc* descs = upload_sequences(s, seqs, true, "ssm_conv");
  const cuda::SsmConvArgs args{static_cast<const float*>(x.data),      cuda::stride_of(x),
                               static_cast<const float*>(weight.data), weight.dims[0],
                               static_cast<const float*>(bias.data),   x.dims[0],
                               static_cast<float*>(out.data),          cuda::stride_of(out)};
  cuda::launch_ssm_conv(args, descs, static_cast<int64_t>(seqs.size()), s.stream);
  s.check_launch("ssm_conv");
}

void CudaBackend::do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                              const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) {
  State& s = *state_;
  for (const TensorView* t :
       {&x, &dt, &b, &c, weights.a, weights.d, weights.dt_bias, static_cast<const TensorView*>(&y)}) {
    cuda::require_device(s, *t, "ssm_scan", "operands");
  }
  const int64_t state_size = b.dims[0] / weights.groups;
  if (state_size > cuda::kSsmMaxState) {
    fail("ssm_scan: states of {} values per channel (the CUDA backend's scan holds at most {})", state_size,
         cuda::kSsmMaxState);
  }
  if (seqs.empty() || x.rows() == 0) return;
  const cuda::SsmSeqDesc* descs = upload_sequences(s, seqs, false, "ssm_scan");
  const int64_t heads = x.dims[0] / weights.head_dim;
  cuda::SsmScanArgs args;
  args.x = static_cast<const float*>(x.data);
  args.x_stride = cuda::stride_of(x);
  args.dt = static_cast<const float*>(dt.data);
  args.dt_stride = cuda::stride_of(dt);
  args.b = static_cast<const float*>(b.data);
  args.b_stride = cuda::stride_of(b);
  args.c = static_cast<const float*>(c.data);
  args.c_stride = cuda::stride_of(c);
  args.inner = x.dims[0];
  args.head_dim = weights.head_dim;
  args.state_size = state_size;
  args.heads_per_group = heads / weights.groups;
  args.a = static_cast<const float*>(weights.a->data);
  args.d = static_cast<const float*>(weights.d->data);
  args.dt_bias = static_cast<const float*>(weights.dt_bias->data);
  args.y = static_cast<float*>(y.data);
  args.y_stride = cuda::stride_of(y);
  cuda::launch_ssm_scan(args, descs, static_cast<int64_t>(seqs.size()), s.stream);
  s.check_launch("ssm_scan");
}

}  // namespace lumen::backend
