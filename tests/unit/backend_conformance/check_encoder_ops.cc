// The LayerNorm blocks' ops (layer_norm, gelu_erf, gelu_tanh, activation) and an encoder's attention
// (bidirectional_attention) against double-precision formulas. Each is documented as computed
// in double and rounded once (gelu_tanh: read from ggml's f16 table), so a backend may differ
// from the formula by the final rounding plus what a different order of its double sums moves:
// a couple of f32 ulp of the result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "registered_ops.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

// A couple of f32 ulp of `want`, and a floor for results that cancel to near zero.
double ulps(double want, double floor) { return std::abs(want) * 2.5e-7 + floor; }

// Row: {row length, rows, -}; mode 1 normalises in place (out = x), as the models do.
void check_layer_norm(Backend& backend, const RegisteredRow& row) {
  const auto [cols, rows, unused] = row.shape;
  const auto n = static_cast<size_t>(cols * rows);
  const std::array<int64_t, 4> dims = {cols, rows, 1, 1};
  const float eps = 1e-5f;
  // An offset per row, as a post-norm model's residual rows have: the mean must come off exactly.
  std::vector<float> a = random_values(n, 71, -4.0f, 4.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) a[static_cast<size_t>(r * cols + c)] += 100.0f * static_cast<float>(r);
  }
  const std::vector<float> w = random_values(static_cast<size_t>(cols), 72, 0.5f, 1.5f);
  const std::vector<float> b = random_values(static_cast<size_t>(cols), 73, -0.5f, 0.5f);
  const BackendTensor weight = upload_f32(backend, {cols, 1, 1, 1}, w);
  const BackendTensor bias = upload_f32(backend, {cols, 1, 1, 1}, b);
  BackendTensor x = upload_f32(backend, dims, a);
  std::vector<float> got;
  if (row.mode == 1) {
    backend.layer_norm(x.view, weight.view, bias.view, eps, x.view);
    got = download(backend, x.view);
  } else {
    BackendTensor out = allocate(backend, DType::F32, dims);
    backend.layer_norm(x.view, weight.view, bias.view, eps, out.view);
    got = download(backend, out.view);
    EXPECT_EQ(download(backend, x.view), a) << "x changed";
  }
  std::vector<double> want(n), tol(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = a.data() + r * cols;
    double mean = 0.0, variance = 0.0;
    for (int64_t c = 0; c < cols; ++c) mean += xr[c];
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) variance += (xr[c] - mean) * (xr[c] - mean);
    const double inv = 1.0 / std::sqrt(variance / static_cast<double>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<size_t>(r * cols + c);
      want[i] = (xr[c] - mean) * inv * w[static_cast<size_t>(c)] + b[static_cast<size_t>(c)];
      tol[i] = ulps(want[i], 1e-7);
    }
  }
  expect_close(got, want, tol, "layer_norm");
}

double gelu_tanh_formula(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x)));
}

// Row: {row length, rows, -}; values from -12 to 12, past the table's ends.
void check_gelu(Backend& backend, const RegisteredRow& row, bool erf) {
  const auto [cols, rows, unused] = row.shape;
  const auto n = static_cast<size_t>(cols * rows);
  const std::vector<float> a = random_values(n, erf ? 74 : 75, -12.0f, 12.0f);
  BackendTensor x = upload_f32(backend, {cols, rows, 1, 1}, a);
  if (erf) {
    backend.gelu_erf(x.view);
  } else {
    backend.gelu_tanh(x.view);
  }
  const std::vector<float> got = download(backend, x.view);
  std::vector<double> want(n), tol(n);
  for (size_t i = 0; i < n; ++i) {
    const double v = a[i];
    if (erf) {
      want[i] = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
      tol[i] = ulps(want[i], 1e-30);
    } else if (v <= -10.0 || v >= 10.0) {
      want[i] = v <= -10.0 ? 0.0 : v;  // the table's ends, exactly
    } else {
      // ggml's table: the input and the output rounded to f16.
      want[i] = gelu_tanh_formula(v);
      tol[i] = 1.13 * std::abs(v) * std::ldexp(1.0, -11) + std::abs(want[i]) * std::ldexp(1.0, -10);
    }
  }
  expect_close(got, want, tol, erf ? "gelu_erf" : "gelu_tanh");
}

// Row: {row length, rows, -}; mode: the backend::Activation. Each formula in double, rounded once.
void check_activation(Backend& backend, const RegisteredRow& row) {
  const auto [cols, rows, unused] = row.shape;
  const auto n = static_cast<size_t>(cols * rows);
  const auto kind = static_cast<Activation>(row.mode);
  const std::vector<float> a = random_values(n, 76 + static_cast<uint32_t>(row.mode), -12.0f, 12.0f);
  BackendTensor x = upload_f32(backend, {cols, rows, 1, 1}, a);
  backend.activation(x.view, kind);
  const std::vector<float> got = download(backend, x.view);
  std::vector<double> want(n), tol(n);
  for (size_t i = 0; i < n; ++i) {
    const double v = a[i];
    switch (kind) {
      case Activation::QuickGelu: want[i] = v / (1.0 + std::exp(-1.702 * v)); break;
      case Activation::GeluTanh: want[i] = gelu_tanh_formula(v); break;
      case Activation::GeluErf: want[i] = 0.5 * v * std::erfc(-v / std::sqrt(2.0)); break;
      case Activation::Silu: want[i] = v / (1.0 + std::exp(-v)); break;
      case Activation::Tanh: want[i] = std::tanh(v); break;
    }
    tol[i] = ulps(want[i], 1e-30);
  }
  expect_close(got, want, tol, "activation");
  // An activation number that names none: refused, x unchanged.
  EXPECT_THROW(backend.activation(x.view, static_cast<Activation>(9)), Error);
  EXPECT_EQ(download(backend, x.view), got);
}

// The sequences of a bidirectional_attention row's mode: 0 one of 7 rows; 1 several (one of one
// row, an empty one, one of 40) in a batch whose first rows belong to none; 2 one of 300 rows.
std::vector<SequenceSlice> encoder_sequences(int mode, int64_t& batch_rows) {
  switch (mode) {
    case 0: batch_rows = 7; return {{0, 7, 0, {}}};
    case 1: batch_rows = 50; return {{3, 5, 0, {}}, {8, 1, 0, {}}, {9, 0, 0, {}}, {10, 40, 0, {}}};
    default: batch_rows = 300; return {{0, 300, 0, {}}};
  }
}

// Row: {head_dim, query heads, KV heads}; mode: encoder_sequences.
void check_bidirectional_attention(Backend& backend, const RegisteredRow& row) {
  const auto [dim, heads, kv_heads] = row.shape;
  int64_t n = 0;
  const std::vector<SequenceSlice> seqs = encoder_sequences(row.mode, n);
  const std::vector<float> qh = random_values(static_cast<size_t>(dim * heads * n), 81, -1.0f, 1.0f);
  const std::vector<float> kh = random_values(static_cast<size_t>(dim * kv_heads * n), 82, -1.0f, 1.0f);
  const std::vector<float> vh = random_values(static_cast<size_t>(dim * kv_heads * n), 83, -2.0f, 2.0f);
  const BackendTensor q = upload_f32(backend, {dim * heads, n, 1, 1}, qh);
  const BackendTensor k = upload_f32(backend, {dim * kv_heads, n, 1, 1}, kh);
  const BackendTensor v = upload_f32(backend, {dim * kv_heads, n, 1, 1}, vh);
  // Rows no sequence owns keep what out held: fill it with a marker first.
  const std::vector<float> marker(static_cast<size_t>(dim * heads * n), 42.0f);
  BackendTensor out = upload_f32(backend, {dim * heads, n, 1, 1}, marker);
  AttentionConfig config;
  config.n_heads = heads;
  config.n_kv_heads = kv_heads;
  config.head_dim = dim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(dim)) * 3.0f;  // sharper than usual: larger exponents
  backend.bidirectional_attention(q.view, k.view, v.view, seqs, config, out.view);
  const std::vector<float> got = download(backend, out.view);

  std::vector<double> want(marker.begin(), marker.end()), tol(want.size(), 0.0);
  const int64_t group = heads / kv_heads;
  for (const SequenceSlice& seq : seqs) {
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      for (int64_t h = 0; h < heads; ++h) {
        const float* qi = qh.data() + (seq.first_token + i) * dim * heads + h * dim;
        const int64_t kv_col = (h / group) * dim;
        std::vector<double> s(static_cast<size_t>(seq.n_tokens));
        for (int64_t j = 0; j < seq.n_tokens; ++j) {
          const float* kj = kh.data() + (seq.first_token + j) * dim * kv_heads + kv_col;
          double dot = 0.0;
          for (int64_t d = 0; d < dim; ++d) dot += static_cast<double>(qi[d]) * kj[d];
          s[static_cast<size_t>(j)] = dot * config.scale;
        }
        const double most = *std::max_element(s.begin(), s.end());
        double sum = 0.0;
        for (double& e : s) sum += (e = std::exp(e - most));
        for (int64_t d = 0; d < dim; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < seq.n_tokens; ++j) {
            acc += s[static_cast<size_t>(j)] *
                   vh[static_cast<size_t>((seq.first_token + j) * dim * kv_heads + kv_col + d)];
          }
          const auto at = static_cast<size_t>((seq.first_token + i) * dim * heads + h * dim + d);
          want[at] = acc / sum;
          tol[at] = ulps(want[at], 1e-7);
        }
      }
    }
  }
  expect_close(got, want, tol, "bidirectional_attention");
}

// Row lengths with SIMD tails, BERT's and a wide one; separate outputs and in place.
const bool kLayerNormRegistered =
    register_op({OpKind::LayerNorm,
                 {{{17, 5, 0}, 0}, {{384, 3, 0}, 1}, {{768, 9, 0}, 1}, {{1000, 2, 0}, 0}, {{4096, 2, 0}, 1}},
                 check_layer_norm});
const bool kGeluErfRegistered =
    register_op({OpKind::GeluErf, {{{17, 3, 0}, 0}, {{1536, 5, 0}, 0}}, [](Backend& b, const RegisteredRow& r) {
                   check_gelu(b, r, true);
                 }});
const bool kGeluTanhRegistered =
    register_op({OpKind::GeluTanh, {{{17, 3, 0}, 0}, {{1536, 5, 0}, 0}}, [](Backend& b, const RegisteredRow& r) {
                   check_gelu(b, r, false);
                 }});
// Each activation, over a row with a SIMD tail and a vision tower's FFN width (tanh: logits).
const bool kActivationRegistered =
    register_op({OpKind::Activation,
                 {{{17, 3, 0}, 0},
                  {{4304, 2, 0}, 0},
                  {{17, 3, 0}, 1},
                  {{4304, 2, 0}, 1},
                  {{17, 3, 0}, 2},
                  {{33, 2, 0}, 3},
                  {{49152, 2, 0}, 4}},  // tanh over a vocabulary's logits (Gemma 2's soft cap)
                 check_activation});
// BERT's heads (64 x 12), grouped heads, a head of 128 and one of 32 over 300 rows.
const bool kBidirectionalRegistered =
    register_op({OpKind::BidirectionalAttention,
                 {{{64, 12, 12}, 0}, {{64, 4, 2}, 1}, {{128, 2, 1}, 1}, {{32, 3, 3}, 2}},
                 check_bidirectional_attention});

}  // namespace
}  // namespace lumen::backend::conformance
