// RMSNorm, elementwise ops and the gated activations against textbook formulas in f64.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <numbers>
#include <vector>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/rms_norm.h"
#include "kernel_test_util.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu {
namespace {

using testing::random_values;

TEST(RmsNorm, MatchesFormulaForOddSizes) {
  for (const int64_t n : {1, 7, 64, 255, 576, 2049}) {
    const auto x = random_values(static_cast<size_t>(n), 1u + static_cast<uint32_t>(n), -3.0f, 3.0f);
    const auto w = random_values(static_cast<size_t>(n), 2u + static_cast<uint32_t>(n), 0.5f, 1.5f);
    std::vector<float> y(static_cast<size_t>(n));
    const float eps = 1e-5f;
    rms_norm_row(x.data(), w.data(), eps, n, y.data());
    double sum = 0.0;
    for (const float v : x) sum += static_cast<double>(v) * v;
    const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(n) + eps);
    for (size_t i = 0; i < y.size(); ++i) {
      const double want = x[i] * inv_rms * w[i];
      // f32 scale and two f32 products: a few ulp.
      EXPECT_NEAR(y[i], want, 4e-7 * std::abs(want) + 1e-30) << "n=" << n << " i=" << i;
    }
  }
}

TEST(RmsNorm, InPlaceAndEpsilonMatter) {
  std::vector<float> x = {0.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<float> w = {1.0f, 1.0f, 1.0f, 1.0f};
  rms_norm_row(x.data(), w.data(), 1e-6f, 4, x.data());  // all zeros: eps keeps it finite
  for (const float v : x) EXPECT_EQ(v, 0.0f);
  std::vector<float> y = {3.0f, 4.0f};
  const std::vector<float> w2 = {1.0f, 2.0f};
  rms_norm_row(y.data(), w2.data(), 0.0f, 2, y.data());  // rms = sqrt(12.5)
  EXPECT_NEAR(y[0], 3.0 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 2.0 * 4.0 / std::sqrt(12.5), 1e-6);
}

TEST(Elementwise, AddAndScaleAreExact) {
  const auto a = random_values(1001, 5);
  const auto b = random_values(1001, 6);
  std::vector<float> out(a.size());
  add_row_values(a.data(), b.data(), 1001, out.data());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(out[i], a[i] + b[i]);
  scale_row_values(out.data(), 1001, 0.125f);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(out[i], (a[i] + b[i]) * 0.125f);
}

TEST(Activation, SwigluMatchesFormula) {
  // Includes gates far outside the usual range: e^-g overflows for g < -88.7.
  auto g = random_values(1537, 7, -12.0f, 12.0f);
  g[3] = -100.0f;
  g[4] = 100.0f;
  g[5] = 0.0f;
  const auto u = random_values(1537, 8, -2.0f, 2.0f);
  using Fn = void (*)(const float*, const float*, int64_t, float*);
  std::vector<std::pair<const char*, Fn>> impls = {{"dispatch", swiglu_row},
                                                   {"portable", detail::swiglu_row_portable}};
  if (detail::have_activations_avx2() && detected_isa() >= Isa::kAvx2) {
    impls.emplace_back("avx2", detail::swiglu_row_avx2);
  }
  for (const auto& [name, fn] : impls) {
    std::vector<float> out(g.size());
    fn(g.data(), u.data(), 1537, out.data());
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
      // A few f32 roundings plus expf (or the ~2 ulp polynomial): 1e-6 relative.
      EXPECT_NEAR(out[i], want, 1e-6 * std::abs(want) + 1e-30) << name << " g=" << g[i];
    }
  }
}

TEST(Activation, SiluMatchesFormula) {
  auto x = random_values(1539, 12, -12.0f, 12.0f);
  x[3] = -100.0f;  // e^-x overflows
  x[4] = 100.0f;
  x[5] = 0.0f;
  using Fn = void (*)(const float*, int64_t, float*);
  std::vector<std::pair<const char*, Fn>> impls = {{"dispatch", silu_row}, {"portable", detail::silu_row_portable}};
  if (detail::have_activations_avx2() && detected_isa() >= Isa::kAvx2) {
    impls.emplace_back("avx2", detail::silu_row_avx2);
  }
  for (const auto& [name, fn] : impls) {
    std::vector<float> out = x;
    fn(out.data(), 1539, out.data());  // in place, as the convolution applies it
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
      EXPECT_NEAR(out[i], want, 1e-6 * std::abs(want) + 1e-30) << name << " x=" << x[i];
    }
  }
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TEST(Activation, GeluTableFollowsTheTanhFormulaWithinF16Rounding) {
  const auto x = random_values(20000, 9, -12.0f, 12.0f);
  for (const float v : x) {
    const double want = gelu_tanh(v);
    // ggml rounds the input and the result to f16: relative 2^-11 each, the slope is < 1.2.
    const double tol = 1.2 * std::abs(v) * 0x1p-11 + std::abs(want) * 0x1p-11 + 1e-7;
    EXPECT_NEAR(gelu_tanh_like_ggml(v), want, tol) << "x=" << v;
  }
  EXPECT_EQ(gelu_tanh_like_ggml(-10.0f), 0.0f);
  EXPECT_EQ(gelu_tanh_like_ggml(-50.0f), 0.0f);
  EXPECT_EQ(gelu_tanh_like_ggml(10.0f), 10.0f);
  EXPECT_EQ(gelu_tanh_like_ggml(1e6f), 1e6f);
  // Inside the table range the result is always an f16 value (the table's output).
  for (const float v : {0.3f, -2.7f, 9.99f}) {
    const float g = gelu_tanh_like_ggml(v);
    EXPECT_EQ(g, testing::round_to_f16(g)) << v;
  }
}

TEST(Activation, GegluMultipliesTheTableValue) {
  const auto g = random_values(999, 10, -11.0f, 11.0f);
  const auto u = random_values(999, 11);
  std::vector<float> out(g.size());
  geglu_row(g.data(), u.data(), 999, out.data());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(out[i], gelu_tanh_like_ggml(g[i]) * u[i]);
}

// The eight-lane GeGLU reads the same table entry as the scalar one for every gate: every f16
// value (each table index), the points half-way between neighbours (rounding ties), the edges
// of the table's range, and a row length that leaves a tail.
TEST(Activation, GegluOnEightLanesIsTheScalarOneBitForBit) {
  if (!detail::have_activations_avx2() || detected_isa() < Isa::kAvx2) GTEST_SKIP() << "no AVX2 here";
  std::vector<float> g;
  for (uint32_t h = 0; h < (1u << 16); ++h) {
    const float v = tensor::fp16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(v)) continue;
    g.push_back(v);
    const float next = tensor::fp16_to_float(static_cast<uint16_t>(h + 1));
    if (std::isfinite(v) && std::isfinite(next)) g.push_back(v + (next - v) / 2);
  }
  for (float v : {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), 1e30f, -1e30f}) {
    g.push_back(v);
  }
  g.push_back(0.5f);  // a tail of one past the last full vector of 8
  const std::vector<float> u = random_values(g.size(), 12);
  const auto n = static_cast<int64_t>(g.size());
  std::vector<float> lanes(g.size()), scalar(g.size());
  detail::geglu_row_avx2(g.data(), u.data(), n, lanes.data());
  detail::geglu_row_portable(g.data(), u.data(), n, scalar.data());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(lanes[i]), std::bit_cast<uint32_t>(scalar[i])) << "gate " << g[i];
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
