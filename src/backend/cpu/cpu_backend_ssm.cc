// The CPU backend's state-space ops (Backend::ssm_conv, ssm_scan): operand checks, then the
// kernels of ssm_conv.h and ssm_scan.h spread over the pool, one task per sequence and slice of
// channels (the convolution) or per sequence and head (the scan). Sequences' states are
// disjoint, so tasks never share memory they write.
#include <algorithm>
#include <string_view>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ssm_conv.h"
#include "backend/cpu/ssm_scan.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

// Channels per convolution task: enough work to be worth a wake-up, few enough to spread a
// decode step's one row over the pool.
constexpr int64_t kConvChannelsPerTask = 256;

void check_rows(const TensorView& t, int64_t cols, int64_t rows, std::string_view op, std::string_view name) {
  if (t.type != tensor::DType::F32 || t.dims[0] != cols || t.rows() < rows || t.data == nullptr ||
      t.row_bytes < static_cast<size_t>(cols) * sizeof(float) || t.row_bytes % sizeof(float) != 0) {
    fail("{}: {} must be f32 with {} rows of {} values", op, name, rows, cols);
  }
}

size_t stride(const TensorView& t) { return t.row_bytes / sizeof(float); }

// Every sequence's rows inside the batch of n rows, its state views of the given shapes.
void check_sequences(std::span<const SsmSequence> seqs, int64_t n, std::string_view op, bool conv, int64_t cols,
                     int64_t rows) {
  for (const SsmSequence& s : seqs) {
    if (s.first_token < 0 || s.n_tokens < 0 || s.first_token + s.n_tokens > n) {
      fail("{}: a sequence's rows {}..{} are outside the batch of {}", op, s.first_token, s.first_token + s.n_tokens,
           n);
    }
    const TensorView& state = conv ? s.conv_window : s.state;
    if (state.dims[0] != cols || state.rows() != rows || state.row_bytes != static_cast<size_t>(cols) * sizeof(float) ||
        (state.data == nullptr && rows * cols != 0)) {
      fail("{}: a sequence's {} must be f32 {{{}, {}}}", op, conv ? "conv_window" : "state", cols, rows);
    }
  }
}

}  // namespace

void CpuBackend::do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                             std::span<const SsmSequence> seqs, TensorView& out) {
  const int64_t channels = x.dims[0], n = x.rows(), kernel = weight.dims[0];
  if (kernel < 1) fail("ssm_conv: the kernel has {} taps", kernel);
  check_rows(x, channels, n, "ssm_conv", "x");
  check_rows(weight, kernel, channels, "ssm_conv", "weight");
  if (weight.row_bytes != static_cast<size_t>(kernel) * sizeof(float)) fail("ssm_conv: weight rows must be contiguous");
  check_rows(bias, channels, 1, "ssm_conv", "bias");
  check_rows(out, channels, n, "ssm_conv", "out");
  if (out.data == x.data) fail("ssm_conv: out may not alias x");
  check_sequences(seqs, n, "ssm_conv", true, channels, kernel - 1);
  const int64_t slices = (channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  const auto n_tasks = static_cast<int64_t>(seqs.size()) * slices;
  auto run = [&](int64_t task, unsigned) {
    const SsmSequence& s = seqs[static_cast<size_t>(task / slices)];
    const int64_t c0 = (task % slices) * kConvChannelsPerTask;
    cpu::SsmConvTask t{x.row<const float>(s.first_token),
                       stride(x),
                       s.n_tokens,
                       static_cast<const float*>(weight.data),
                       kernel,
                       static_cast<const float*>(bias.data),
                       static_cast<float*>(s.conv_window.data),
                       channels,
                       out.row<float>(s.first_token),
                       stride(out)};
    cpu::ssm_conv_channels(t, c0, std::min(channels, c0 + kConvChannelsPerTask));
  };
  if (n_tasks <= 1 || pool_.size() == 1) {
    for (int64_t task = 0; task < n_tasks; ++task) run(task, 0);
    return;
  }
  pool_.parallel_for(n_tasks, run);
}

void CpuBackend::do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                             const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) {
  const int64_t inner = x.dims[0], n = x.rows(), head_dim = weights.head_dim, groups = weights.groups;
  if (head_dim < 1 || inner % head_dim != 0) fail("ssm_scan: heads of {} do not divide {} channels", head_dim, inner);
  const int64_t heads = inner / head_dim;
  if (groups < 1 || heads % groups != 0) fail("ssm_scan: {} groups do not divide {} heads", groups, heads);
  if (b.dims[0] % groups != 0) fail("ssm_scan: B rows of {} are not {} groups", b.dims[0], groups);
  const int64_t state_size = b.dims[0] / groups;
  check_rows(x, inner, n, "ssm_scan", "x");
  check_rows(dt, heads, n, "ssm_scan", "dt");
  check_rows(b, state_size * groups, n, "ssm_scan", "b");
  check_rows(c, state_size * groups, n, "ssm_scan", "c");
  check_rows(y, inner, n, "ssm_scan", "y");
  if (weights.a == nullptr || weights.d == nullptr || weights.dt_bias == nullptr)
    fail("ssm_scan: A, D and dt's bias are required");
  for (const TensorView* w : {weights.a, weights.d, weights.dt_bias}) {
    if (w->type != tensor::DType::F32 || w->elements() != heads || w->data == nullptr) {
      fail("ssm_scan: A, D and dt's bias must be f32 with one value per head ({})", heads);
    }
  }
  if (y.data == x.data || y.data == dt.data || y.data == b.data || y.data == c.data) {
    fail("ssm_scan: y may not alias an input");
  }
  check_sequences(seqs, n, "ssm_scan", false, state_size, inner);
  const auto n_tasks = static_cast<int64_t>(seqs.size()) * heads;
  auto run = [&](int64_t task, unsigned) {
    const SsmSequence& s = seqs[static_cast<size_t>(task / heads)];
    cpu::SsmScanTask t{x.row<const float>(s.first_token),
                       stride(x),
                       dt.row<const float>(s.first_token),
                       stride(dt),
                       b.row<const float>(s.first_token),
                       stride(b),
                       c.row<const float>(s.first_token),
                       stride(c),
                       s.n_tokens,
                       head_dim,
                       state_size,
                       heads / groups,
                       static_cast<const float*>(weights.a->data),
                       static_cast<const float*>(weights.d->data),
                       static_cast<const float*>(weights.dt_bias->data),
                       static_cast<float*>(s.state.data),
                       y.row<float>(s.first_token),
                       stride(y)};
    cpu::ssm_scan_head(t, task % heads);
  };
  if (n_tasks <= 1 || pool_.size() == 1) {
    for (int64_t task = 0; task < n_tasks; ++task) run(task, 0);
    return;
  }
  pool_.parallel_for(n_tasks, run);
}

}  // namespace lumen::backend
