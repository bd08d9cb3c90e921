#include "backend/common/ssm_checks.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace lumen::backend::common {

namespace {

void check_rows(const TensorView& t, int64_t cols, int64_t rows, std::string_view op, std::string_view name) {
  if (t.type != tensor::DType::F32 || t.dims[0] != cols || t.rows() < rows || t.data == nullptr ||
      t.row_bytes < static_cast<size_t>(cols) * sizeof(float) || t.row_bytes % sizeof(float) != 0) {
    fail("{}: {} must be f32 with {} rows of {} values", op, name, rows, cols);
  }
}

// Every sequence's rows inside the batch of n rows, its state views of the given shapes, no two
// of them the same memory (the backends update sequences in parallel).
void check_sequences(std::span<const SsmSequence> seqs, int64_t n, std::string_view op, bool conv, int64_t cols,
                     int64_t rows) {
  std::vector<const void*> states;
  states.reserve(seqs.size());
  for (const SsmSequence& s : seqs) {
    if (s.first_token < 0 || s.n_tokens < 0 || s.first_token > n - s.n_tokens) {
      fail("{}: a sequence's rows {}..{} are outside the batch of {}", op, s.first_token, s.first_token + s.n_tokens,
           n);
    }
    const TensorView& state = conv ? s.conv_window : s.state;
    if (state.type != tensor::DType::F32 || state.dims[0] != cols || state.rows() != rows ||
        state.row_bytes != static_cast<size_t>(cols) * sizeof(float) || (state.data == nullptr && rows * cols != 0)) {
      fail("{}: a sequence's {} must be f32 {{{}, {}}}", op, conv ? "conv_window" : "state", cols, rows);
    }
    if (rows * cols != 0) states.push_back(state.data);
  }
  std::sort(states.begin(), states.end(), std::less<>());
  if (std::adjacent_find(states.begin(), states.end()) != states.end()) {
    fail("{}: two sequences share one {}", op, conv ? "conv_window" : "state");
  }
}

}  // namespace

void check_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                    std::span<const SsmSequence> seqs, const TensorView& out) {
  const int64_t channels = x.dims[0], n = x.rows(), kernel = weight.dims[0];
  if (kernel < 1 || kernel > kSsmConvMaxTaps) {
    fail("ssm_conv: the kernel has {} taps (1 to {} supported)", kernel, kSsmConvMaxTaps);
  }
  check_rows(x, channels, n, "ssm_conv", "x");
  check_rows(weight, kernel, channels, "ssm_conv", "weight");
  if (weight.row_bytes != static_cast<size_t>(kernel) * sizeof(float)) fail("ssm_conv: weight rows must be contiguous");
  check_rows(bias, channels, 1, "ssm_conv", "bias");
  check_rows(out, channels, n, "ssm_conv", "out");
  if (out.data == x.data) fail("ssm_conv: out may not alias x");
  check_sequences(seqs, n, "ssm_conv", true, channels, kernel - 1);
}

SsmScanShape check_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                            const SsmScanWeights& weights, std::span<const SsmSequence> seqs, const TensorView& y) {
  SsmScanShape shape;
  shape.inner = x.dims[0];
  shape.head_dim = weights.head_dim;
  shape.groups = weights.groups;
  const int64_t n = x.rows();
  if (shape.head_dim < 1 || shape.inner % shape.head_dim != 0) {
    fail("ssm_scan: heads of {} do not divide {} channels", shape.head_dim, shape.inner);
  }
  shape.heads = shape.inner / shape.head_dim;
  if (shape.groups < 1 || shape.heads % shape.groups != 0) {
    fail("ssm_scan: {} groups do not divide {} heads", shape.groups, shape.heads);
  }
  if (b.dims[0] % shape.groups != 0) fail("ssm_scan: B rows of {} are not {} groups", b.dims[0], shape.groups);
  shape.state_size = b.dims[0] / shape.groups;
  const int64_t bc_width = shape.state_size * shape.groups;
  check_rows(x, shape.inner, n, "ssm_scan", "x");
  check_rows(dt, shape.heads, n, "ssm_scan", "dt");
  check_rows(b, bc_width, n, "ssm_scan", "b");
  check_rows(c, bc_width, n, "ssm_scan", "c");
  check_rows(y, shape.inner, n, "ssm_scan", "y");
  if (weights.a == nullptr || weights.d == nullptr || weights.dt_bias == nullptr) {
    fail("ssm_scan: A, D and dt's bias are all needed");
  }
  for (const TensorView* w : {weights.a, weights.d, weights.dt_bias}) {
    if (w->type != tensor::DType::F32 || w->elements() != shape.heads || w->data == nullptr) {
      fail("ssm_scan: A, D and dt's bias must be f32 with one value per head ({})", shape.heads);
    }
  }
  if (y.data == x.data || y.data == dt.data || y.data == b.data || y.data == c.data) {
    fail("ssm_scan: y may not alias an input");
  }
  check_sequences(seqs, n, "ssm_scan", false, shape.state_size, shape.inner);
  return shape;
}

}  // namespace lumen::backend::common
