// The row-wise and elementwise ops against double-precision formulas. add, add_row and scale
// are one IEEE operation per element, so every backend must give exactly the f32 result;
// rms_norm may sum in any order; SwiGLU's exp may be a polynomial within a few ulp; GeGLU
// reads gelu from ggml's f16 table (input and output rounded to f16). add_rms_norm, a declared
// op, registers its own rows (registered_ops.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "checks.h"
#include "registered_ops.h"
#include "tensor_io.h"
#include "util/error.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x))); }

}  // namespace

void check_pointwise(Backend& backend, const Case& c) {
  const auto [cols, rows, unused] = c.shape;
  const auto n = static_cast<size_t>(cols * rows);
  const std::array<int64_t, 4> dims = {cols, rows, 1, 1};
  const std::vector<float> a = random_values(n, 51, -4.0f, 4.0f);
  const std::vector<float> b = random_values(n, 52, -4.0f, 4.0f);
  const std::vector<float> row = random_values(static_cast<size_t>(cols), 53, 0.5f, 1.5f);
  std::vector<double> want(n), tol(n, 0.0);
  std::vector<float> got;

  switch (c.op) {
    case Op::kRmsNorm: {
      const float eps = 1e-5f;
      const BackendTensor x = upload_f32(backend, dims, a);
      const BackendTensor w = upload_f32(backend, {cols, 1, 1, 1}, row);
      BackendTensor out = allocate(backend, DType::F32, dims);
      backend.rms_norm(x.view, w.view, eps, out.view);
      got = download(backend, out.view);
      for (int64_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (int64_t j = 0; j < cols; ++j) squares += static_cast<double>(a[r * cols + j]) * a[r * cols + j];
        const double inv_rms = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
        for (int64_t j = 0; j < cols; ++j) {
          const auto i = static_cast<size_t>(r * cols + j);
          want[i] = a[i] * inv_rms * row[static_cast<size_t>(j)];
          tol[i] = std::abs(want[i]) * 4e-6 + 1e-7;
        }
      }
      break;
    }
    case Op::kAdd: {
      const BackendTensor x = upload_f32(backend, dims, a);
      const BackendTensor y = upload_f32(backend, dims, b);
      BackendTensor out = allocate(backend, DType::F32, dims);
      backend.add(x.view, y.view, out.view);
      got = download(backend, out.view);
      for (size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
      break;
    }
    case Op::kAddRow: {
      BackendTensor x = upload_f32(backend, dims, a);
      const BackendTensor bias = upload_f32(backend, {cols, 1, 1, 1}, row);
      backend.add_row(x.view, bias.view);
      got = download(backend, x.view);
      for (size_t i = 0; i < n; ++i) want[i] = a[i] + row[i % static_cast<size_t>(cols)];
      break;
    }
    case Op::kScale: {
      const float factor = 0.37f;
      BackendTensor x = upload_f32(backend, dims, a);
      backend.scale(x.view, factor);
      got = download(backend, x.view);
      for (size_t i = 0; i < n; ++i) want[i] = a[i] * factor;
      break;
    }
    case Op::kSwiglu:
    case Op::kGeglu: {
      const bool geglu = c.op == Op::kGeglu;
      const BackendTensor gate = upload_f32(backend, dims, a);
      const BackendTensor up = upload_f32(backend, dims, b);
      BackendTensor out = allocate(backend, DType::F32, dims);
      if (geglu) {
        backend.geglu(gate.view, up.view, out.view);
      } else {
        backend.swiglu(gate.view, up.view, out.view);
      }
      got = download(backend, out.view);
      for (size_t i = 0; i < n; ++i) {
        const double g = a[i], u = b[i];
        const double act = geglu ? gelu_tanh(g) : g / (1.0 + std::exp(-g));
        want[i] = act * u;
        tol[i] = geglu
                     ? (1.13 * std::abs(g) * std::ldexp(1.0, -11) + std::abs(act) * std::ldexp(1.0, -10)) * std::abs(u)
                     : std::abs(want[i]) * 1e-5 + 1e-7;
      }
      break;
    }
    default: FAIL() << "not a pointwise op: " << op_name(c.op);
  }
  expect_close(got, want, tol, op_name(c.op));
}

namespace {

// add_rms_norm: the sum is one IEEE addition per element (exact), the norm of that sum has
// rms_norm's tolerance, and both must be bit for bit what the backend's own add and rms_norm
// give (the transformer's plain path on a backend without the op). Row: {row length, rows, -};
// mode 1 runs in place as the transformer does (sum over a, out over b).
void check_add_rms_norm(Backend& backend, const RegisteredRow& row) {
  const auto [cols, rows, unused] = row.shape;
  const auto n = static_cast<size_t>(cols * rows);
  const std::array<int64_t, 4> dims = {cols, rows, 1, 1};
  const float eps = 1e-6f;
  const std::vector<float> a = random_values(n, 61, -4.0f, 4.0f);
  const std::vector<float> b = random_values(n, 62, -4.0f, 4.0f);
  const std::vector<float> w = random_values(static_cast<size_t>(cols), 63, 0.5f, 1.5f);
  const BackendTensor weight = upload_f32(backend, {cols, 1, 1, 1}, w);
  BackendTensor x = upload_f32(backend, dims, a), y = upload_f32(backend, dims, b);
  std::vector<float> sum, out;
  if (row.mode == 1) {
    backend.add_rms_norm(x.view, y.view, weight.view, eps, x.view, y.view);
    sum = download(backend, x.view);
    out = download(backend, y.view);
  } else {
    BackendTensor s = allocate(backend, tensor::DType::F32, dims), o = allocate(backend, tensor::DType::F32, dims);
    backend.add_rms_norm(x.view, y.view, weight.view, eps, s.view, o.view);
    sum = download(backend, s.view);
    out = download(backend, o.view);
    EXPECT_EQ(download(backend, x.view), a) << "a changed";
    EXPECT_EQ(download(backend, y.view), b) << "b changed";
  }
  std::vector<double> want_sum(n), want(n), tol(n);
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<size_t>(r * cols + j);
      const float s = a[i] + b[i];
      want_sum[i] = s;
      squares += static_cast<double>(s) * s;
    }
    const double inv_rms = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<size_t>(r * cols + j);
      want[i] = want_sum[i] * inv_rms * w[static_cast<size_t>(j)];
      tol[i] = std::abs(want[i]) * 4e-6 + 1e-7;
    }
  }
  expect_close(sum, want_sum, std::vector<double>(n, 0.0), "add_rms_norm sum");
  expect_close(out, want, tol, "add_rms_norm out");

  // The unfused ops on the same inputs.
  const BackendTensor pa = upload_f32(backend, dims, a), pb = upload_f32(backend, dims, b);
  BackendTensor ps = allocate(backend, tensor::DType::F32, dims), po = allocate(backend, tensor::DType::F32, dims);
  backend.add(pa.view, pb.view, ps.view);
  backend.rms_norm(ps.view, weight.view, eps, po.view);
  EXPECT_EQ(sum, download(backend, ps.view)) << "the sum differs from add's";
  EXPECT_EQ(out, download(backend, po.view)) << "the norm differs from add then rms_norm";
}

// Row lengths with SIMD tails, one decode row, one long row; separate outputs and in place.
const bool kAddRmsNormRegistered =
    register_op({OpKind::AddRmsNorm,
                 {{{17, 5, 0}, 0}, {{1000, 3, 0}, 0}, {{4096, 2, 0}, 0}, {{576, 1, 0}, 1}, {{1000, 7, 0}, 1}},
                 check_add_rms_norm});

// Bad input is refused before anything is written, on a backend that has the op, and a backend
// without it (has_op false) refuses the call with a sentence naming itself and the op.
TEST(AddRmsNorm, RefusesBadInputAndBackendsWithoutIt) {
  constexpr int64_t kCols = 8, kRows = 3;
  // s has a spare row, so that a view one row into it overlaps sv by all but a row.
  std::vector<float> a(kCols * kRows, 1.0f), b(kCols * kRows, 2.0f), w(kCols, 1.0f), s(kCols * (kRows + 1), 42.0f),
      o(kCols * kRows, 42.0f), narrow(kCols, 1.0f);
  const TensorView av = f32_matrix(a.data(), kCols, kRows), bv = f32_matrix(b.data(), kCols, kRows);
  const TensorView wv = f32_matrix(w.data(), kCols, 1);
  TensorView sv = f32_matrix(s.data(), kCols, kRows), ov = f32_matrix(o.data(), kCols, kRows);
  TensorView short_w = f32_matrix(narrow.data(), kCols - 1, 1);
  TensorView one_row = f32_matrix(s.data(), kCols, 1);
  TensorView overlapping = f32_matrix(s.data() + kCols, kCols, kRows);
  CpuBackend cpu(2);
  auto refused = [&](Backend& backend, TensorView& sum, TensorView& out, const TensorView& weight, const char* why) {
    try {
      backend.add_rms_norm(av, bv, weight, 1e-6f, sum, out);
      ADD_FAILURE() << why << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    EXPECT_TRUE(std::all_of(s.begin(), s.end(), [](float v) { return v == 42.0f; })) << why;
    EXPECT_TRUE(std::all_of(o.begin(), o.end(), [](float v) { return v == 42.0f; })) << why;
  };
  refused(cpu, sv, ov, short_w, "weight must be f32 with rows of 8");
  refused(cpu, one_row, ov, wv, "operands hold 3 and 1 rows");
  refused(cpu, sv, sv, wv, "out may not overlap sum");
  refused(cpu, sv, overlapping, wv, "out may not overlap sum");

  cpu.set_composed_ops(true);
  ASSERT_FALSE(cpu.has_op(OpKind::AddRmsNorm));
  refused(cpu, sv, ov, wv, "the cpu backend has no add_rms_norm");
}

}  // namespace

}  // namespace lumen::backend::conformance
