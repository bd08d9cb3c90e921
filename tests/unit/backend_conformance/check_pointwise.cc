// The row-wise and elementwise ops against double-precision formulas. add, add_row and scale
// are one IEEE operation per element, so every backend must give exactly the f32 result;
// rms_norm may sum in any order; SwiGLU's exp may be a polynomial within a few ulp; GeGLU
// reads gelu from ggml's f16 table (input and output rounded to f16).
#include <gtest/gtest.h>

#include <cmath>

#include "checks.h"
#include "tensor_io.h"

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

}  // namespace lumen::backend::conformance
