// gpt-oss's experts on the CPU backend: moe_ffn with each expert's gate, up and down biases and
// the clamped SwiGLU (Glu::SwigluOai), against the definition written out in double over the
// same f32 weights (llama.cpp's order: biases before the GLU, the down bias before the router's
// weight), and moe_ffn_routed with the same biases as 3-D tensors giving the same rows. The
// activation is checked on its own at its clamps. Leaving the biases out is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cpu/activation.h"
#include "backend/cpu/cpu_backend.h"
#include "kernel_test_util.h"
#include "util/error.h"

namespace lumen::backend {
namespace {

using testing::random_values;

constexpr int64_t kIn = 64, kFf = 96, kExperts = 3, kTokens = 5, kUsed = 2;

double swiglu_oai(double gate, double up) {
  const double g = std::min(gate, 7.0), u = std::clamp(up, -7.0, 7.0);
  return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

TEST(SwigluOai, ClampsAsGptOssDoes) {
  const float gate[] = {-10.0f, -1.0f, 0.0f, 2.5f, 7.0f, 50.0f, 3.0f, 3.0f};
  const float up[] = {0.5f, -20.0f, 1.0f, 2.0f, 8.0f, 1.0f, -7.5f, 6.5f};
  float out[8];
  cpu::swiglu_oai_row(gate, up, 8, out);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(out[i], swiglu_oai(gate[i], up[i]), 1e-5 * (1 + std::abs(out[i]))) << i;
  // A gate past the limit acts as the limit; an up past it, too.
  EXPECT_FLOAT_EQ(out[5], static_cast<float>(swiglu_oai(7.0, 1.0)));
  EXPECT_FLOAT_EQ(out[6], static_cast<float>(swiglu_oai(3.0, -7.0)));
}

struct BiasedExperts {
  std::vector<float> gate = random_values(kIn * kFf * kExperts, 1), up = random_values(kIn * kFf * kExperts, 2),
                     down = random_values(kFf * kIn * kExperts, 3);
  std::vector<float> gate_b = random_values(kFf * kExperts, 4, -2.0f, 2.0f),
                     up_b = random_values(kFf * kExperts, 5, -2.0f, 2.0f),
                     down_b = random_values(kIn * kExperts, 6, -2.0f, 2.0f);
  std::vector<float> x = random_values(kIn * kTokens, 7, -3.0f, 3.0f);
  // Token t's experts and weights, slot by slot.
  std::vector<int32_t> chosen = {0, 2, 1, 0, 2, 1, 1, 2, 0, 1};
  std::vector<float> weights = {0.7f, 0.3f, 0.6f, 0.4f, 0.55f, 0.45f, 0.9f, 0.1f, 0.5f, 0.5f};

  std::vector<double> reference(bool with_biases) const {
    std::vector<double> out(static_cast<size_t>(kIn * kTokens), 0.0);
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t s = 0; s < kUsed; ++s) {
        const int64_t e = chosen[static_cast<size_t>(t * kUsed + s)];
        const double w = weights[static_cast<size_t>(t * kUsed + s)];
        std::vector<double> act(kFf);
        for (int64_t j = 0; j < kFf; ++j) {
          double g = with_biases ? gate_b[static_cast<size_t>(e * kFf + j)] : 0.0;
          double u = with_biases ? up_b[static_cast<size_t>(e * kFf + j)] : 0.0;
          for (int64_t c = 0; c < kIn; ++c) {
            const double xc = x[static_cast<size_t>(t * kIn + c)];
            g += gate[static_cast<size_t>((e * kFf + j) * kIn + c)] * xc;
            u += up[static_cast<size_t>((e * kFf + j) * kIn + c)] * xc;
          }
          act[static_cast<size_t>(j)] = swiglu_oai(g, u);
        }
        for (int64_t o = 0; o < kIn; ++o) {
          double y = with_biases ? down_b[static_cast<size_t>(e * kIn + o)] : 0.0;
          for (int64_t j = 0; j < kFf; ++j)
            y += down[static_cast<size_t>((e * kIn + o) * kFf + j)] * act[static_cast<size_t>(j)];
          out[static_cast<size_t>(t * kIn + o)] += w * y;
        }
      }
    }
    return out;
  }
};

TensorView f32_view(std::vector<float>& v, std::array<int64_t, 4> dims) {
  return {tensor::DType::F32, dims, static_cast<size_t>(dims[0]) * sizeof(float), v.data()};
}

double worst(const std::vector<float>& got, const std::vector<double>& want) {
  double w = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i]));
    if (!(d <= w)) w = std::isnan(d) ? INFINITY : d;
  }
  return w;
}

TEST(MoeFfnBiased, ExpertBiasesAndTheClampedSwigluAsLlamaCppAddsThem) {
  for (const unsigned threads : {1u, 2u}) {
    CpuBackend backend(threads);
    BiasedExperts m;
    const TensorView gate = f32_view(m.gate, {kIn, kFf, kExperts, 1}), up = f32_view(m.up, {kIn, kFf, kExperts, 1});
    const TensorView down = f32_view(m.down, {kFf, kIn, kExperts, 1});
    const TensorView gate_b = f32_view(m.gate_b, {kFf, 1, kExperts, 1}), up_b = f32_view(m.up_b, {kFf, 1, kExperts, 1});
    const TensorView down_b = f32_view(m.down_b, {kIn, 1, kExperts, 1});
    const TensorView x = f32_view(m.x, {kIn, kTokens, 1, 1});
    const std::vector<double> want = m.reference(true);

    // The routed form: the biases as 3-D tensors beside the experts'.
    std::vector<float> routed(static_cast<size_t>(kIn * kTokens), NAN);
    TensorView routed_out = f32_view(routed, {kIn, kTokens, 1, 1});
    std::vector<float> weights = m.weights;
    TensorView experts_view{tensor::DType::I32, {kUsed, kTokens, 1, 1}, kUsed * sizeof(int32_t), m.chosen.data()};
    RoutedExperts matrices{&gate, &up, &down};
    matrices.gate_bias = &gate_b;
    matrices.up_bias = &up_b;
    matrices.down_bias = &down_b;
    backend.moe_ffn_routed(x, experts_view, f32_view(weights, {kUsed, kTokens, 1, 1}), matrices,
                           Backend::Glu::SwigluOai, routed_out);
    EXPECT_LT(worst(routed, want), 1e-4) << threads << " threads";

    // moe_ffn with each expert's slices, and the same output without the biases is far off.
    std::vector<TensorView> views;
    for (int64_t e = 0; e < kExperts; ++e) {
      for (const TensorView* t : {&gate, &up, &down, &gate_b, &up_b, &down_b}) views.push_back(expert_matrix(*t, e));
    }
    std::vector<std::vector<int32_t>> rows(kExperts), slots(kExperts);
    std::vector<std::vector<float>> w(kExperts);
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t s = 0; s < kUsed; ++s) {
        const auto e = static_cast<size_t>(m.chosen[static_cast<size_t>(t * kUsed + s)]);
        rows[e].push_back(static_cast<int32_t>(t));
        slots[e].push_back(static_cast<int32_t>(s));
        w[e].push_back(m.weights[static_cast<size_t>(t * kUsed + s)]);
      }
    }
    for (const bool biases : {true, false}) {
      std::vector<Backend::ExpertWork> work;
      for (size_t e = 0; e < kExperts; ++e) {
        Backend::ExpertWork ew{&views[6 * e], &views[6 * e + 1], &views[6 * e + 2], rows[e], slots[e], w[e]};
        if (biases) {
          ew.gate_bias = &views[6 * e + 3];
          ew.up_bias = &views[6 * e + 4];
          ew.down_bias = &views[6 * e + 5];
        }
        work.push_back(ew);
      }
      std::vector<float> out(static_cast<size_t>(kIn * kTokens), NAN);
      TensorView out_view = f32_view(out, {kIn, kTokens, 1, 1});
      backend.moe_ffn(x, work, kUsed, Backend::Glu::SwigluOai, out_view);
      if (biases) {
        EXPECT_LT(worst(out, want), 1e-4) << threads << " threads";
        EXPECT_EQ(out, routed) << "moe_ffn and moe_ffn_routed differ";
      } else {
        EXPECT_LT(worst(out, m.reference(false)), 1e-4);
        EXPECT_GT(worst(out, want), 1e-2) << "the biases change nothing: the test cannot fail";
      }
    }
  }
}

// gpt-oss's activation and biases exist inside moe_ffn only.
TEST(MoeFfnBiased, MatmulGluRefusesTheClampedSwiglu) {
  CpuBackend backend(1);
  std::vector<float> w = random_values(kIn * kFf, 1), x = random_values(kIn, 2), g(kFf), u(kFf);
  const TensorView wv = f32_view(w, {kIn, kFf, 1, 1}), xv = f32_view(x, {kIn, 1, 1, 1});
  TensorView gv = f32_view(g, {kFf, 1, 1, 1}), uv = f32_view(u, {kFf, 1, 1, 1});
  EXPECT_THROW(backend.matmul_glu(wv, wv, xv, Backend::Glu::SwigluOai, gv, uv), Error);
}

}  // namespace
}  // namespace lumen::backend
