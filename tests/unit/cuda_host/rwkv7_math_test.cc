// RWKV 7's CUDA arithmetic (rwkv7_math.h) on the host against the CPU backend's kernels
// (cpu/rwkv7_rows.h, the portable wkv7 loop): the same f32 steps in the same order give the same
// bits, and the norm's block order of its double sums stays within an ulp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/rwkv7_rows.h"
#include "backend/cpu/rwkv_wkv7.h"
#include "backend/cuda/rwkv7_math.h"
#include "unit/backend/kernel_test_util.h"

namespace lumen::backend::cuda {
namespace {

using backend::testing::random_values;

// The kernel's norm of one group with its sums in index order (the CPU's).
std::vector<float> norm_in_order(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                                 double eps) {
  const auto n = static_cast<int64_t>(x.size());
  double sum = 0.0;
  for (float v : x) sum = hd::add_rn(sum, static_cast<double>(v));
  const double mean = hd::div_rn(sum, static_cast<double>(n));
  double squares = 0.0;
  for (float v : x) squares = hd::add_rn(squares, hd::squared_deviation(v, mean));
  const float inv = hd::rwkv7_norm_inverse(squares, n, eps);
  std::vector<float> y(x.size());
  for (size_t c = 0; c < x.size(); ++c) y[c] = hd::rwkv7_norm_value(x[c], mean, inv, w[c], b[c]);
  return y;
}

TEST(Rwkv7NormMath, EqualsTheCpu) {
  for (const int64_t n : {64, 768, 2048}) {
    for (const double eps : {1e-5, 64e-5}) {
      std::vector<float> x = random_values(static_cast<size_t>(n), static_cast<uint32_t>(n), -3.0f, 3.0f);
      for (float& v : x) v += 40.0f;
      const std::vector<float> w = random_values(static_cast<size_t>(n), 5, 0.5f, 1.5f);
      const std::vector<float> b = random_values(static_cast<size_t>(n), 6, -0.5f, 0.5f);
      std::vector<float> cpu(x.size());
      cpu::rwkv7_normalize(x.data(), n, eps, w.data(), b.data(), cpu.data());
      EXPECT_EQ(norm_in_order(x, w, b, eps), cpu) << n;
    }
  }
}

TEST(Rwkv7ElementMath, KeysBonusGateAndActivationsEqualTheCpu) {
  constexpr int64_t kHead = 64, kHeads = 4, kWidth = kHead * kHeads;
  const auto v = [](uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
    return random_values(static_cast<size_t>(kWidth), seed, lo, hi);
  };
  std::vector<float> w = v(1), a = v(2), k = v(3), kk(kWidth), b(kWidth);
  const std::vector<float> w0 = v(4), a0 = v(5), k_k = v(6, 0.5f, 1.5f), k_a = v(7, 0.5f, 1.5f);
  std::vector<float> cw = w, ca = a, ck = k, ckk(kWidth), cb(kWidth);
  std::vector<float> w0c = w0, a0c = a0, kkc = k_k, kac = k_a;
  const Rwkv7KeyWeights weights{f32_matrix(w0c.data(), kWidth, 1), f32_matrix(a0c.data(), kWidth, 1),
                                f32_matrix(kkc.data(), kWidth, 1), f32_matrix(kac.data(), kWidth, 1)};
  cpu::rwkv7_keys_row(cw.data(), ca.data(), ck.data(), ckk.data(), cb.data(), weights, kWidth, kHead);
  for (int64_t h = 0; h < kHeads; ++h) {
    const int64_t at = h * kHead;
    hd::rwkv7_keys_head(w.data() + at, a.data() + at, k.data() + at, kk.data() + at, b.data() + at, w0.data() + at,
                        a0.data() + at, k_k.data() + at, k_a.data() + at, kHead);
  }
  EXPECT_EQ(w, cw);
  EXPECT_EQ(a, ca);
  EXPECT_EQ(k, ck);
  EXPECT_EQ(kk, ckk);
  EXPECT_EQ(b, cb);

  std::vector<float> out = v(8), cout = out;
  const std::vector<float> r = v(9), g = v(10), vv = v(11), r_k = v(12);
  cpu::rwkv7_bonus_gate_row(cout.data(), r.data(), k.data(), vv.data(), g.data(), r_k.data(), kWidth, kHead);
  for (int64_t h = 0; h < kHeads; ++h) {
    const int64_t at = h * kHead;
    hd::rwkv7_bonus_gate_head(out.data() + at, r.data() + at, k.data() + at, vv.data() + at, g.data() + at,
                              r_k.data() + at, kHead);
  }
  EXPECT_EQ(out, cout);

  for (const float x : random_values(5000, 13, -12.0f, 12.0f)) {
    EXPECT_EQ(hd::rwkv7_activation(x, 0), cpu::rwkv7_activation(x, Rwkv7Activation::Tanh)) << x;
    EXPECT_EQ(hd::rwkv7_activation(x, 1), cpu::rwkv7_activation(x, Rwkv7Activation::Sigmoid)) << x;
    EXPECT_EQ(hd::rwkv7_activation(x, 2), cpu::rwkv7_activation(x, Rwkv7Activation::ReluSquared)) << x;
  }
}

// The kernel's threads for one head over n tokens (thread i: state row i) against the CPU's
// portable loop: outputs and the state left behind, bit for bit.
TEST(Wkv7RowMath, EqualsTheCpusPortableLoop) {
  for (const int64_t size : {64, 16, 12}) {
    constexpr int64_t kHeads = 2, kTokens = 9;
    const int64_t width = size * kHeads;
    const auto rows = [&](uint32_t seed, float lo, float hi) {
      return random_values(static_cast<size_t>(width * kTokens), seed, lo, hi);
    };
    const std::vector<float> r = rows(1, -1.0f, 1.0f), w = rows(2, 0.5f, 0.99f), k = rows(3, -1.0f, 1.0f),
                             v = rows(4, -1.0f, 1.0f), a = rows(5, -0.3f, 0.3f), b = rows(6, -0.3f, 0.3f);
    const std::vector<float> initial = random_values(static_cast<size_t>(size * width), 7, -0.5f, 0.5f);
    std::vector<float> cpu_state = initial, cpu_out(static_cast<size_t>(width * kTokens));
    cpu::Wkv7Task task;
    task.r = r.data();
    task.w = w.data();
    task.k = k.data();
    task.v = v.data();
    task.a = a.data();
    task.b = b.data();
    task.stride = static_cast<size_t>(width);
    task.n = kTokens;
    task.head_size = size;
    task.state = cpu_state.data();
    task.out = cpu_out.data();
    task.out_stride = static_cast<size_t>(width);
    for (int64_t h = 0; h < kHeads; ++h) cpu::detail::wkv7_head_portable(task, h);

    std::vector<float> state = initial, out(cpu_out.size());
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t i = 0; i < size; ++i) {
        float s[64] = {};
        float* row = state.data() + (h * size + i) * size;
        for (int64_t j = 0; j < size; ++j) s[j] = row[j];
        for (int64_t t = 0; t < kTokens; ++t) {
          const size_t at = static_cast<size_t>(t * width + h * size);
          out[at + static_cast<size_t>(i)] =
              hd::wkv7_row<64>(s, r.data() + at, w.data() + at, k.data() + at, a.data() + at, b.data() + at,
                               v[at + static_cast<size_t>(i)], static_cast<int>(size));
        }
        for (int64_t j = 0; j < size; ++j) row[j] = s[j];
      }
    }
    EXPECT_EQ(out, cpu_out) << "head size " << size;
    EXPECT_EQ(state, cpu_state) << "head size " << size;
  }
}

}  // namespace
}  // namespace lumen::backend::cuda
