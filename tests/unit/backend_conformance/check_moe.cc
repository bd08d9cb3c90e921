// moe_ffn against a mixture of experts written out in double over the weights' decoded values:
// each routed row's gate and up products, the GLU, down, and the weighted sum over the row's
// slots. The tolerance chains the bounds check_matmul.cc states for one product (8-bit
// activations per block, f32 sums) through the GLU (check_glu's bound) and the down product,
// whose input is itself the backend's rounded GLU output; then the weighted sum, in f32.
// Mode 1: gpt-oss's experts (BackendFeature::BiasedExperts): gate, up and down biases, large enough
// to reach the clamped SwiGLU's limits (|value| 7), and that GLU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "checks.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

bool is_k_quant(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
         t == DType::IQ4_XS;  // 256-value blocks of Q8_K activations
}

// y = W x for one row r of W {cols, rows} (decoded), with the bound on a backend's error when x
// itself may be off by x_tol per element.
struct Product {
  double y = 0.0, tol = 0.0;
};
Product product(DType type, const float* w_row, const std::vector<double>& x, const std::vector<double>& x_tol) {
  const bool quantized = type != DType::F32 && type != DType::F16 && type != DType::BF16;
  const auto cols = static_cast<int64_t>(x.size());
  const int64_t block = is_k_quant(type) ? 256 : 32;
  Product p;
  double magnitude = 0.0;
  for (int64_t b = 0; b < cols; b += block) {
    double amax = 0.0, wsum = 0.0;
    for (int64_t c = b; c < std::min(cols, b + block); ++c) {
      const double w = w_row[c];
      p.y += w * x[static_cast<size_t>(c)];
      magnitude += std::abs(w * x[static_cast<size_t>(c)]);
      p.tol += std::abs(w) * x_tol[static_cast<size_t>(c)];
      amax = std::max(amax, std::abs(x[static_cast<size_t>(c)]) + x_tol[static_cast<size_t>(c)]);
      wsum += std::abs(w);
    }
    if (quantized) p.tol += wsum * amax / 127.0;
  }
  p.tol += magnitude * std::ldexp(1.0, -20) + 1e-6;
  return p;
}

struct Route {
  int32_t row, slot;
  float weight;
};

}  // namespace

// gpt-oss's clamped SwiGLU in double (backend_types.h's Glu::SwigluOai).
double swiglu_oai(double gate, double up) {
  const double g = std::min(gate, 7.0), u = std::clamp(up, -7.0, 7.0);
  return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

void check_moe_ffn(Backend& backend, const Case& c) {
  const auto [in, ff, tokens] = c.shape;
  constexpr int64_t kExperts = 3, kSlots = 3;
  const bool gpt_oss = c.mode == 1;
  if (gpt_oss && !backend.supports(BackendFeature::BiasedExperts)) {
    GTEST_SKIP() << backend.name() << " does not run gpt-oss's experts";
  }
  // Three experts in 3-D tensors, as a MoE layer stores them (in 1-based slot terms, a shared
  // expert is just one more expert with its own slot).
  const std::array<int64_t, 4> up_dims = {in, ff, kExperts, 1}, down_dims = {ff, in, kExperts, 1};
  const HostTensor gate_h = encode(c.type, up_dims, random_values(static_cast<size_t>(in * ff * kExperts), 41));
  const HostTensor up_h = encode(c.type, up_dims, random_values(static_cast<size_t>(in * ff * kExperts), 42));
  const HostTensor down_h = encode(c.type, down_dims, random_values(static_cast<size_t>(in * ff * kExperts), 43));
  const std::vector<float> gate_w = decode(gate_h), up_w = decode(up_h), down_w = decode(down_h);
  const BackendTensor gate_d = upload(backend, gate_h), up_d = upload(backend, up_h), down_d = upload(backend, down_h);
  const std::vector<float> x = random_values(static_cast<size_t>(in * tokens), 44);
  const BackendTensor xd = upload_f32(backend, {in, tokens, 1, 1}, x);
  BackendTensor out = allocate(backend, DType::F32, {in, tokens, 1, 1});
  // gpt-oss: each expert's bias rows, {width, 1, experts} as a layer stores them.
  const std::vector<float> gate_b = random_values(static_cast<size_t>(ff * kExperts), 46, -6.0f, 6.0f);
  const std::vector<float> up_b = random_values(static_cast<size_t>(ff * kExperts), 47, -6.0f, 6.0f);
  const std::vector<float> down_b = random_values(static_cast<size_t>(in * kExperts), 48);
  const BackendTensor gate_bd = upload_f32(backend, {ff, 1, kExperts, 1}, gate_b);
  const BackendTensor up_bd = upload_f32(backend, {ff, 1, kExperts, 1}, up_b);
  const BackendTensor down_bd = upload_f32(backend, {in, 1, kExperts, 1}, down_b);

  // Each row but the last goes to expert 0 or 1 in slot 0, and to the other one in slot 1 or to
  // expert 2 in slot 2 (so the empty slot varies); the last row goes nowhere and must come out
  // 0. Weights are whatever a router may give, signs included.
  std::mt19937 rng(45);
  std::uniform_real_distribution<float> weight(-1.0f, 1.0f);
  std::vector<std::vector<Route>> routes(kExperts);
  for (int32_t t = 0; t + 1 < tokens; ++t) {
    const int32_t first = t % 2, second = (t / 2) % 2 == 0 ? 1 - first : 2;
    routes[static_cast<size_t>(first)].push_back({t, 0, weight(rng)});
    if (second == 2) {
      routes[2].push_back({t, 2, weight(rng)});
    } else {
      routes[static_cast<size_t>(second)].push_back({t, 1, weight(rng)});
    }
  }
  std::vector<std::vector<int32_t>> rows(kExperts), slots(kExperts);
  std::vector<std::vector<float>> weights(kExperts);
  std::vector<TensorView> mats;
  for (int64_t e = 0; e < kExperts; ++e) {
    mats.push_back(expert_matrix(gate_d.view, e));
    mats.push_back(expert_matrix(up_d.view, e));
    mats.push_back(expert_matrix(down_d.view, e));
    mats.push_back(expert_matrix(gate_bd.view, e));
    mats.push_back(expert_matrix(up_bd.view, e));
    mats.push_back(expert_matrix(down_bd.view, e));
  }
  std::vector<Backend::ExpertWork> work;
  for (int64_t e = 0; e < kExperts; ++e) {
    auto& list = routes[static_cast<size_t>(e)];
    std::sort(list.begin(), list.end(), [](const Route& a, const Route& b) { return a.row < b.row; });
    for (const Route& r : list) {
      rows[static_cast<size_t>(e)].push_back(r.row);
      slots[static_cast<size_t>(e)].push_back(r.slot);
      weights[static_cast<size_t>(e)].push_back(r.weight);
    }
    if (list.empty()) continue;
    const TensorView* m = &mats[static_cast<size_t>(6 * e)];
    Backend::ExpertWork w{&m[0],
                          &m[1],
                          &m[2],
                          rows[static_cast<size_t>(e)],
                          slots[static_cast<size_t>(e)],
                          weights[static_cast<size_t>(e)]};
    if (gpt_oss) {
      w.gate_bias = &m[3];
      w.up_bias = &m[4];
      w.down_bias = &m[5];
    }
    work.push_back(w);
  }
  backend.moe_ffn(xd.view, work, kSlots, gpt_oss ? Backend::Glu::SwigluOai : Backend::Glu::Swiglu, out.view);

  // The reference, slot by slot.
  std::vector<double> want(static_cast<size_t>(in * tokens), 0.0), tol(static_cast<size_t>(in * tokens), 1e-6);
  for (int64_t e = 0; e < kExperts; ++e) {
    const size_t up_base = static_cast<size_t>(e * ff * in), down_base = static_cast<size_t>(e * in * ff);
    for (const Route& r : routes[static_cast<size_t>(e)]) {
      const std::vector<double> xt(x.begin() + r.row * in, x.begin() + (r.row + 1) * in);
      const std::vector<double> exact(static_cast<size_t>(in), 0.0);
      std::vector<double> act(static_cast<size_t>(ff)), act_tol(static_cast<size_t>(ff));
      for (int64_t j = 0; j < ff; ++j) {
        Product g = product(c.type, gate_w.data() + up_base + static_cast<size_t>(j * in), xt, exact);
        Product u = product(c.type, up_w.data() + up_base + static_cast<size_t>(j * in), xt, exact);
        if (gpt_oss) {
          // The biases join in f32 (half an ulp each); the clamped SwiGLU's slope is below 1.13
          // in the gate, and its up factor is clamp(u) + 1.
          const size_t b = static_cast<size_t>(e * ff + j);
          g.y += gate_b[b];
          u.y += up_b[b];
          g.tol += std::abs(g.y) * std::ldexp(1.0, -24);
          u.tol += std::abs(u.y) * std::ldexp(1.0, -24);
          const double a = swiglu_oai(g.y, 0.0);  // g sigmoid(1.702 g), times 1
          const double a_tol = 1.13 * g.tol + 1e-6 * std::abs(a);
          const double factor = std::clamp(u.y, -7.0, 7.0) + 1.0;
          act[static_cast<size_t>(j)] = swiglu_oai(g.y, u.y);
          act_tol[static_cast<size_t>(j)] = a_tol * (std::abs(factor) + u.tol) + std::abs(a) * u.tol + 1e-6;
          continue;
        }
        const double a = g.y / (1.0 + std::exp(-g.y));
        const double a_tol = 1.13 * g.tol + 1e-6 * std::abs(a);
        act[static_cast<size_t>(j)] = a * u.y;
        act_tol[static_cast<size_t>(j)] = a_tol * (std::abs(u.y) + u.tol) + std::abs(a) * u.tol + 1e-6;
      }
      for (int64_t o = 0; o < in; ++o) {
        Product y = product(c.type, down_w.data() + down_base + static_cast<size_t>(o * ff), act, act_tol);
        if (gpt_oss) {
          y.y += down_b[static_cast<size_t>(e * in + o)];
          y.tol += std::abs(y.y) * std::ldexp(1.0, -24);
        }
        const auto at = static_cast<size_t>(r.row * in + o);
        want[at] += static_cast<double>(r.weight) * y.y;
        tol[at] += std::abs(r.weight) * y.tol + std::abs(r.weight * y.y) * std::ldexp(1.0, -20);
      }
    }
  }
  expect_close(download(backend, out.view), want, tol, "out");
}

}  // namespace lumen::backend::conformance
