// matmul, matmul_same_input and matmul_glu against y = W x in double over the weights' decoded
// values. The tolerance is what the backends' documented rounding allows, per output:
//  - quantized weights: x is quantized per block to 8 bits (Q8_0 / Q8_1: 32 values, Q8_K: 256)
//    before integer dot products, moving each x by at most amax(block) / 254; we allow twice
//    that, weighted by sum |w| over the block;
//  - a backend may round weights and x to f16 for a tensor-core GEMM (CUDA over more than 8
//    tokens): 2^-10 relative on every type but F32 (BF16 weights become f16 exactly there);
//  - f32 sums in any order: 2^-20 relative to sum |w x|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

bool is_k_quant(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
         t == DType::IQ4_XS;  // 256-value blocks of Q8_K activations
}

double x_rounding(DType t) { return t == DType::F32 ? 0.0 : std::ldexp(1.0, -10); }

struct Reference {
  std::vector<double> y;
  std::vector<double> tol;
};

// y[t * rows + r] for W {cols, rows} (decoded) and x {cols, tokens}.
Reference reference_matmul(DType type, const std::vector<float>& w, const std::vector<float>& x, int64_t cols,
                           int64_t rows, int64_t tokens) {
  const bool quantized = type != DType::F32 && type != DType::F16 && type != DType::BF16;
  const int64_t block = is_k_quant(type) ? 256 : 32;
  Reference ref;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* xt = x.data() + t * cols;
    for (int64_t r = 0; r < rows; ++r) {
      const float* wr = w.data() + r * cols;
      double sum = 0.0, magnitude = 0.0, quant_error = 0.0;
      for (int64_t b = 0; b < cols; b += block) {
        double amax = 0.0, wsum = 0.0;
        for (int64_t c = b; c < std::min(cols, b + block); ++c) {
          sum += static_cast<double>(wr[c]) * xt[c];
          magnitude += std::abs(static_cast<double>(wr[c]) * xt[c]);
          amax = std::max(amax, std::abs(static_cast<double>(xt[c])));
          wsum += std::abs(static_cast<double>(wr[c]));
        }
        if (quantized) quant_error += wsum * amax / 127.0;
      }
      ref.y.push_back(sum);
      ref.tol.push_back(quant_error + magnitude * (x_rounding(type) + std::ldexp(1.0, -20)) + 1e-6);
    }
  }
  return ref;
}

struct Weight {
  HostTensor host;
  std::vector<float> decoded;
};

Weight make_weight(DType type, int64_t cols, int64_t rows, uint32_t seed) {
  Weight w;
  w.host = encode(type, {cols, rows, 1, 1}, random_values(static_cast<size_t>(cols * rows), seed));
  w.decoded = decode(w.host);
  return w;
}

void check_matmul(Backend& backend, const Case& c) {
  const auto [cols, rows, tokens] = c.shape;
  const Weight w = make_weight(c.type, cols, rows, 11);
  const std::vector<float> x = random_values(static_cast<size_t>(cols * tokens), 12);
  const BackendTensor wd = upload(backend, w.host);
  const BackendTensor xd = upload_f32(backend, {cols, tokens, 1, 1}, x);
  BackendTensor yd = allocate(backend, DType::F32, {rows, tokens, 1, 1});
  backend.matmul(wd.view, xd.view, yd.view);
  const Reference ref = reference_matmul(c.type, w.decoded, x, cols, rows, tokens);
  expect_close(download(backend, yd.view), ref.y, ref.tol, "y");
}

void check_same_input(Backend& backend, const Case& c) {
  const auto [cols, rows, tokens] = c.shape;
  // A layer's Q, K and V: one full-size output and two smaller ones.
  const int64_t out_rows[] = {rows, rows / 3, rows / 3};
  const std::vector<float> x = random_values(static_cast<size_t>(cols * tokens), 21);
  const BackendTensor xd = upload_f32(backend, {cols, tokens, 1, 1}, x);
  std::vector<Weight> weights;
  std::vector<BackendTensor> wd, yd;
  for (int i = 0; i < 3; ++i) {
    weights.push_back(make_weight(c.type, cols, out_rows[i], 22 + static_cast<uint32_t>(i)));
    wd.push_back(upload(backend, weights.back().host));
    yd.push_back(allocate(backend, DType::F32, {out_rows[i], tokens, 1, 1}));
  }
  const Backend::MatmulOutput outputs[] = {
      {&wd[0].view, &yd[0].view}, {&wd[1].view, &yd[1].view}, {&wd[2].view, &yd[2].view}};
  backend.matmul_same_input(xd.view, outputs);
  for (int i = 0; i < 3; ++i) {
    const Reference ref = reference_matmul(c.type, weights[i].decoded, x, cols, out_rows[i], tokens);
    expect_close(download(backend, yd[i].view), ref.y, ref.tol, fmt::format("y{}", i));
  }
}

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x))); }

void check_glu(Backend& backend, const Case& c) {
  const auto [cols, rows, tokens] = c.shape;
  const bool geglu = static_cast<GluMode>(c.mode) == GluMode::kGeglu;
  const Weight gate_w = make_weight(c.type, cols, rows, 31);
  const Weight up_w = make_weight(c.type, cols, rows, 32);
  const std::vector<float> x = random_values(static_cast<size_t>(cols * tokens), 33);
  const BackendTensor gwd = upload(backend, gate_w.host);
  const BackendTensor uwd = upload(backend, up_w.host);
  const BackendTensor xd = upload_f32(backend, {cols, tokens, 1, 1}, x);
  BackendTensor gate = allocate(backend, DType::F32, {rows, tokens, 1, 1});
  BackendTensor up = allocate(backend, DType::F32, {rows, tokens, 1, 1});
  backend.matmul_glu(gwd.view, uwd.view, xd.view, geglu ? Backend::Glu::Geglu : Backend::Glu::Swiglu, gate.view,
                     up.view);

  const Reference g = reference_matmul(c.type, gate_w.decoded, x, cols, rows, tokens);
  const Reference u = reference_matmul(c.type, up_w.decoded, x, cols, rows, tokens);
  expect_close(download(backend, up.view), u.y, u.tol, "up");
  // glu(g) u moves by at most |glu'| (< 1.13 for both) times g's error, times |u| and its own
  // error; GeGLU also reads gelu from an f16 table (input and output rounded to f16).
  Reference out;
  for (size_t i = 0; i < g.y.size(); ++i) {
    const double gi = g.y[i], ui = u.y[i];
    const double act = geglu ? gelu_tanh(gi) : gi / (1.0 + std::exp(-gi));
    double act_tol = 1.13 * g.tol[i] + 1e-6 * std::abs(act);
    if (geglu) act_tol += 1.13 * std::abs(gi) * std::ldexp(1.0, -11) + std::abs(act) * std::ldexp(1.0, -10);
    out.y.push_back(act * ui);
    out.tol.push_back(act_tol * (std::abs(ui) + u.tol[i]) + std::abs(act) * u.tol[i] + 1e-6);
  }
  expect_close(download(backend, gate.view), out.y, out.tol, "gate");
}

}  // namespace

void check_matmul_ops(Backend& backend, const Case& c) {
  switch (c.op) {
    case Op::kMatmul: check_matmul(backend, c); return;
    case Op::kMatmulSameInput: check_same_input(backend, c); return;
    default: check_glu(backend, c); return;
  }
}

}  // namespace lumen::backend::conformance
