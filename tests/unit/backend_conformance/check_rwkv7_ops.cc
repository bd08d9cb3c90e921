// RWKV 7's element-wise ops (rwkv7_norm, rwkv7_token_shift, rwkv7_activation,
// rwkv7_value_residual, rwkv7_keys, rwkv7_bonus_gate) against their formulas in double. Each is
// a handful of f32 roundings (and an f32 exp or tanh) per value, so a backend may differ from the
// formula by a few ulp of the terms it adds; a wrong index, head or sequence moves whole values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "registered_ops.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

constexpr double kUlps = 1e-6;  // a few f32 ulp, relative

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Row: {width, rows, group}; mode 1 in place.
void check_norm(Backend& backend, const RegisteredRow& row) {
  const auto [width, rows, group] = row.shape;
  const auto n = static_cast<size_t>(width * rows);
  std::vector<float> x = random_values(n, 101, -3.0f, 3.0f);
  for (size_t i = 0; i < n; ++i) x[i] += static_cast<float>(i / static_cast<size_t>(group) % 5) * 7.0f;
  const std::vector<float> w = random_values(static_cast<size_t>(width), 102, 0.5f, 1.5f);
  const std::vector<float> b = random_values(static_cast<size_t>(width), 103, -0.5f, 0.5f);
  const double eps = 64e-5;
  BackendTensor xd = upload_f32(backend, {width, rows, 1, 1}, x);
  const BackendTensor wd = upload_f32(backend, {width, 1, 1, 1}, w), bd = upload_f32(backend, {width, 1, 1, 1}, b);
  std::vector<float> got;
  if (row.mode == 1) {
    backend.rwkv7_norm(xd.view, wd.view, bd.view, eps, group, xd.view);
    got = download(backend, xd.view);
  } else {
    BackendTensor out = allocate(backend, DType::F32, {width, rows, 1, 1});
    backend.rwkv7_norm(xd.view, wd.view, bd.view, eps, group, out.view);
    got = download(backend, out.view);
  }
  std::vector<double> want(n), tol(n);
  for (size_t at = 0; at < n; at += static_cast<size_t>(group)) {
    double mean = 0.0, var = 0.0;
    for (int64_t c = 0; c < group; ++c) mean += x[at + static_cast<size_t>(c)];
    mean /= static_cast<double>(group);
    for (int64_t c = 0; c < group; ++c) var += std::pow(x[at + static_cast<size_t>(c)] - mean, 2.0);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(group) + eps);
    for (int64_t c = 0; c < group; ++c) {
      const size_t i = at + static_cast<size_t>(c), col = i % static_cast<size_t>(width);
      const double term = (x[i] - mean) * inv * w[col];
      want[i] = term + b[col];
      tol[i] = kUlps * (std::abs(term) + std::abs(b[col])) + 1e-7;
    }
  }
  expect_close(got, want, tol, "rwkv7_norm");
}

// Row: {width, mixes, -}: three sequences (rows 1-3, row 5, rows 7-10; rows 0, 4 and 6 owned by
// none, an empty sequence between) of a batch of 11.
void check_token_shift(Backend& backend, const RegisteredRow& row) {
  const int64_t width = row.shape[0], mixes = row.shape[1], n = 11;
  const std::vector<float> x = random_values(static_cast<size_t>(width * n), 111, -2.0f, 2.0f);
  const std::vector<float> m = random_values(static_cast<size_t>(width * mixes), 112, 0.0f, 1.0f);
  const std::vector<float> state = random_values(static_cast<size_t>(width * 4), 113, -2.0f, 2.0f);
  const BackendTensor xd = upload_f32(backend, {width, n, 1, 1}, x), md = upload_f32(backend, {width, mixes, 1, 1}, m);
  BackendTensor sd = upload_f32(backend, {width, 4, 1, 1}, state);
  const std::vector<float> marker(static_cast<size_t>(width * n * mixes), 42.0f);
  BackendTensor out = upload_f32(backend, {width, n * mixes, 1, 1}, marker);
  const auto shift = [&](int64_t s) {
    TensorView v = sd.view;
    v.dims[1] = 1;
    v.data = static_cast<uint8_t*>(sd.view.data) + static_cast<size_t>(s) * sd.view.row_bytes;
    return v;
  };
  const std::vector<TokenShiftSequence> seqs = {{1, 3, shift(0)}, {5, 1, shift(1)}, {6, 0, shift(3)}, {7, 4, shift(2)}};
  backend.rwkv7_token_shift(xd.view, seqs, md.view, out.view);
  std::vector<double> want(marker.begin(), marker.end()), tol(want.size(), 0.0);
  std::vector<double> want_state(state.begin(), state.end());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t slot = s == 0 ? 0 : s == 1 ? 1 : s == 2 ? 3 : 2;
    for (int64_t i = 0; i < seqs[s].n_tokens; ++i) {
      const int64_t t = seqs[s].first_token + i;
      for (int64_t mix = 0; mix < mixes; ++mix) {
        for (int64_t c = 0; c < width; ++c) {
          const double cur = x[static_cast<size_t>(t * width + c)];
          const double before =
              i == 0 ? state[static_cast<size_t>(slot * width + c)] : x[static_cast<size_t>((t - 1) * width + c)];
          const auto at = static_cast<size_t>(((mix * n) + t) * width + c);
          want[at] = cur + (before - cur) * m[static_cast<size_t>(mix * width + c)];
          tol[at] = kUlps * (std::abs(cur) + std::abs(before));
        }
      }
    }
    if (seqs[s].n_tokens > 0) {
      const int64_t last = seqs[s].first_token + seqs[s].n_tokens - 1;
      for (int64_t c = 0; c < width; ++c)
        want_state[static_cast<size_t>(slot * width + c)] = x[static_cast<size_t>(last * width + c)];
    }
  }
  expect_close(download(backend, out.view), want, tol, "rwkv7_token_shift out");
  expect_close(download(backend, sd.view), want_state, std::vector<double>(want_state.size(), 0.0),
               "rwkv7_token_shift shift rows");
}

// Row: {width, rows, function}.
void check_activation(Backend& backend, const RegisteredRow& row) {
  const auto [width, rows, f] = row.shape;
  const std::vector<float> x = random_values(static_cast<size_t>(width * rows), 121, -6.0f, 6.0f);
  BackendTensor xd = upload_f32(backend, {width, rows, 1, 1}, x);
  backend.rwkv7_activation(xd.view, static_cast<Rwkv7Activation>(f));
  std::vector<double> want(x.size()), tol(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    want[i] = f == 0 ? std::tanh(v) : f == 1 ? sigmoid(v) : std::pow(std::max(v, 0.0), 2.0);
    tol[i] = kUlps * std::abs(want[i]) + 1e-8;
  }
  expect_close(download(backend, xd.view), want, tol, "rwkv7_activation");
}

// Row: {width, rows, -}.
void check_value_residual(Backend& backend, const RegisteredRow& row) {
  const int64_t width = row.shape[0], rows = row.shape[1];
  const auto n = static_cast<size_t>(width * rows);
  const std::vector<float> v = random_values(n, 131, -2.0f, 2.0f), first = random_values(n, 132, -2.0f, 2.0f);
  const std::vector<float> mix = random_values(n, 133, -3.0f, 3.0f);
  const std::vector<float> v0 = random_values(static_cast<size_t>(width), 134, -1.0f, 1.0f);
  BackendTensor vd = upload_f32(backend, {width, rows, 1, 1}, v);
  const BackendTensor fd = upload_f32(backend, {width, rows, 1, 1}, first),
                      md = upload_f32(backend, {width, rows, 1, 1}, mix);
  const BackendTensor v0d = upload_f32(backend, {width, 1, 1, 1}, v0);
  backend.rwkv7_value_residual(vd.view, fd.view, md.view, v0d.view);
  std::vector<double> want(n), tol(n);
  for (size_t i = 0; i < n; ++i) {
    want[i] = v[i] + (first[i] - v[i]) * sigmoid(static_cast<double>(mix[i]) + v0[i % static_cast<size_t>(width)]);
    tol[i] = kUlps * (std::abs(v[i]) + std::abs(first[i]));
  }
  expect_close(download(backend, vd.view), want, tol, "rwkv7_value_residual");
}

// Row: {width, rows, head size}.
void check_keys(Backend& backend, const RegisteredRow& row) {
  // Plain variables, not a structured binding: clang 14 cannot capture those in a lambda.
  const int64_t width = row.shape[0], rows = row.shape[1], head = row.shape[2];
  const auto n = static_cast<size_t>(width * rows);
  const std::vector<float> w = random_values(n, 141, -2.0f, 2.0f), a = random_values(n, 142, -2.0f, 2.0f);
  const std::vector<float> k = random_values(n, 143, -2.0f, 2.0f);
  const auto param = [&](uint32_t seed, float lo, float hi) {
    return random_values(static_cast<size_t>(width), seed, lo, hi);
  };
  const std::vector<float> w0 = param(144, -1.0f, 1.0f), a0 = param(145, -1.0f, 1.0f);
  const std::vector<float> k_k = param(146, 0.5f, 1.5f), k_a = param(147, 0.5f, 1.5f);
  BackendTensor wd = upload_f32(backend, {width, rows, 1, 1}, w), ad = upload_f32(backend, {width, rows, 1, 1}, a);
  BackendTensor kd = upload_f32(backend, {width, rows, 1, 1}, k);
  BackendTensor kkd = allocate(backend, DType::F32, {width, rows, 1, 1}),
                bd = allocate(backend, DType::F32, {width, rows, 1, 1});
  const BackendTensor w0d = upload_f32(backend, {width, 1, 1, 1}, w0), a0d = upload_f32(backend, {width, 1, 1, 1}, a0);
  const BackendTensor kkw = upload_f32(backend, {width, 1, 1, 1}, k_k),
                      kaw = upload_f32(backend, {width, 1, 1, 1}, k_a);
  Rwkv7KeyRows keys{wd.view, ad.view, kd.view, kkd.view, bd.view};
  backend.rwkv7_keys(keys, {w0d.view, a0d.view, kkw.view, kaw.view}, head);
  std::vector<double> ww(n), wa(n), wk(n), wkk(n), wb(n), tol_w(n), tol_a(n), tol_k(n), tol_kk(n), tol_b(n);
  for (size_t at = 0; at < n; at += static_cast<size_t>(head)) {
    double length = 0.0;
    for (int64_t c = 0; c < head; ++c) {
      const size_t i = at + static_cast<size_t>(c);
      length += std::pow(static_cast<double>(k[i]) * k_k[i % static_cast<size_t>(width)], 2.0);
    }
    length = std::max(std::sqrt(length), 1e-12);
    for (int64_t c = 0; c < head; ++c) {
      const size_t i = at + static_cast<size_t>(c), col = i % static_cast<size_t>(width);
      ww[i] = std::exp(-0.606531 * sigmoid(static_cast<double>(w[i]) + w0[col]));
      wa[i] = sigmoid(static_cast<double>(a[i]) + a0[col]);
      const double kk = static_cast<double>(k[i]) * k_k[col] / length, ka = static_cast<double>(k[i]) * k_a[col];
      wk[i] = k[i] + wa[i] * ka - ka;
      wb[i] = kk * wa[i];
      wkk[i] = -kk;
      tol_w[i] = 4 * kUlps * ww[i];
      tol_a[i] = 4 * kUlps * wa[i];
      tol_k[i] = 4 * kUlps * (std::abs(k[i]) + 2.0 * std::abs(ka));
      tol_kk[i] = 4 * kUlps * std::abs(kk) + 1e-8;
      tol_b[i] = 8 * kUlps * std::abs(wb[i]) + 1e-8;
    }
  }
  expect_close(download(backend, wd.view), ww, tol_w, "rwkv7_keys w");
  expect_close(download(backend, ad.view), wa, tol_a, "rwkv7_keys a");
  expect_close(download(backend, kd.view), wk, tol_k, "rwkv7_keys k");
  expect_close(download(backend, kkd.view), wkk, tol_kk, "rwkv7_keys kk");
  expect_close(download(backend, bd.view), wb, tol_b, "rwkv7_keys b");
}

// Row: {width, rows, head size}.
void check_bonus_gate(Backend& backend, const RegisteredRow& row) {
  const auto [width, rows, head] = row.shape;
  const auto n = static_cast<size_t>(width * rows);
  const std::vector<float> o = random_values(n, 151, -2.0f, 2.0f), r = random_values(n, 152, -1.0f, 1.0f);
  const std::vector<float> k = random_values(n, 153, -1.0f, 1.0f), v = random_values(n, 154, -2.0f, 2.0f);
  const std::vector<float> g = random_values(n, 155, 0.0f, 1.0f);
  const std::vector<float> r_k = random_values(static_cast<size_t>(width), 156, -1.0f, 1.0f);
  BackendTensor od = upload_f32(backend, {width, rows, 1, 1}, o);
  const BackendTensor rd = upload_f32(backend, {width, rows, 1, 1}, r),
                      kd = upload_f32(backend, {width, rows, 1, 1}, k);
  const BackendTensor vd = upload_f32(backend, {width, rows, 1, 1}, v),
                      gd = upload_f32(backend, {width, rows, 1, 1}, g);
  const BackendTensor rkd = upload_f32(backend, {width, 1, 1, 1}, r_k);
  backend.rwkv7_bonus_gate(od.view, rd.view, kd.view, vd.view, gd.view, rkd.view, head);
  std::vector<double> want(n), tol(n);
  for (size_t at = 0; at < n; at += static_cast<size_t>(head)) {
    double bonus = 0.0, magnitude = 0.0;
    for (int64_t c = 0; c < head; ++c) {
      const size_t i = at + static_cast<size_t>(c);
      const double term = static_cast<double>(r[i]) * k[i] * r_k[i % static_cast<size_t>(width)];
      bonus += term;
      magnitude += std::abs(term);
    }
    for (int64_t c = 0; c < head; ++c) {
      const size_t i = at + static_cast<size_t>(c);
      want[i] = (o[i] + v[i] * bonus) * g[i];
      tol[i] =
          (kUlps * (std::abs(o[i]) + std::abs(v[i] * bonus)) + std::abs(v[i]) * magnitude * static_cast<double>(head) * 6e-8) * g[i] + 1e-8;
    }
  }
  expect_close(download(backend, od.view), want, tol, "rwkv7_bonus_gate");
}

// RWKV 7's widths (heads of 64) and small odd ones; decode rows and prompt rows.
const bool kNormRegistered = register_op(
    {OpKind::Rwkv7Norm, {{{768, 5, 768}, 0}, {{768, 3, 64}, 1}, {{96, 7, 12}, 0}, {{2048, 1, 2048}, 1}}, check_norm});
const bool kTokenShiftRegistered =
    register_op({OpKind::Rwkv7TokenShift, {{{64, 6, 0}, 0}, {{768, 1, 0}, 0}, {{17, 3, 0}, 0}}, check_token_shift});
const bool kActivationRegistered =
    register_op({OpKind::Rwkv7Activation, {{{96, 5, 0}, 0}, {{96, 5, 1}, 0}, {{1000, 3, 2}, 0}}, check_activation});
const bool kValueResidualRegistered =
    register_op({OpKind::Rwkv7ValueResidual, {{{768, 4, 0}, 0}, {{17, 9, 0}, 0}}, check_value_residual});
const bool kKeysRegistered =
    register_op({OpKind::Rwkv7Keys, {{{768, 4, 64}, 0}, {{48, 9, 12}, 0}, {{64, 1, 64}, 0}}, check_keys});
const bool kBonusGateRegistered =
    register_op({OpKind::Rwkv7BonusGate, {{{768, 4, 64}, 0}, {{48, 9, 12}, 0}}, check_bonus_gate});

}  // namespace
}  // namespace lumen::backend::conformance
