// The CUDA LayerNorm, GELU and encoder attention arithmetic (encoder_math.h) on the host against
// the CPU backend's kernels: the same double steps give the same f32 bits, and the block's own
// order of sums (encoder_ops.cu) stays within an ulp of the CPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "backend/cpu/bidirectional_attention.h"
#include "backend/cpu/layer_norm.h"
#include "backend/cuda/encoder_math.h"
#include "unit/backend/kernel_test_util.h"

namespace lumen::backend::cuda {
namespace {

using backend::testing::random_values;

constexpr int kThreads = 256;  // encoder_ops.cu's kNormThreads

// The kernel's order of a row sum: thread t adds elements t, t + 256, ... in turn; each warp's
// 32 partial sums are combined by the xor-shuffle tree; the 8 warp sums are added in order.
double block_order_sum(const std::vector<double>& terms) {
  std::vector<double> thread(kThreads, 0.0);
  for (size_t i = 0; i < terms.size(); ++i) thread[i % kThreads] = hd::add_rn(thread[i % kThreads], terms[i]);
  double total = 0.0;
  for (int w = 0; w < kThreads / 32; ++w) {
    std::array<double, 32> lanes{};
    for (size_t l = 0; l < 32; ++l) lanes[l] = thread[static_cast<size_t>(32 * w) + l];
    for (size_t offset = 16; offset > 0; offset >>= 1) {
      std::array<double, 32> next{};
      for (size_t l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ offset];
      lanes = next;
    }
    total = hd::add_rn(total, lanes[0]);
  }
  return total;
}

// The kernel's row: its mean and deviation sums in block order (or the CPU's, in index order).
std::vector<float> layer_norm_row(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                                  float eps, bool block_order) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<double> terms(x.begin(), x.end());
  const auto sum = [&](const std::vector<double>& t) {
    if (block_order) return block_order_sum(t);
    double s = 0.0;
    for (double v : t) s = hd::add_rn(s, v);
    return s;
  };
  const double mean = hd::div_rn(sum(terms), static_cast<double>(n));
  for (int64_t c = 0; c < n; ++c)
    terms[static_cast<size_t>(c)] = hd::squared_deviation(x[static_cast<size_t>(c)], mean);
  const double inverse = hd::layer_norm_inverse(sum(terms), n, eps);
  std::vector<float> y(x.size());
  for (size_t c = 0; c < x.size(); ++c) y[c] = hd::layer_norm_value(x[c], mean, inverse, w[c], b[c]);
  return y;
}

TEST(LayerNormMath, EqualsTheCpuInItsOrderAndWithinAnUlpInTheBlocks) {
  for (const int64_t n : {17, 384, 768, 1000, 4096}) {
    for (const float offset : {0.0f, 300.0f}) {
      std::vector<float> x = random_values(static_cast<size_t>(n), static_cast<uint32_t>(n), -4.0f, 4.0f);
      for (float& v : x) v += offset;  // a post-norm model's rows: the mean must come off exactly
      const std::vector<float> w = random_values(static_cast<size_t>(n), 2, 0.5f, 1.5f);
      const std::vector<float> b = random_values(static_cast<size_t>(n), 3, -0.5f, 0.5f);
      std::vector<float> cpu(x.size());
      cpu::layer_norm_row(x.data(), w.data(), b.data(), 1e-5f, n, cpu.data());
      EXPECT_EQ(layer_norm_row(x, w, b, 1e-5f, false), cpu) << n;
      const std::vector<float> block = layer_norm_row(x, w, b, 1e-5f, true);
      for (size_t c = 0; c < x.size(); ++c) {
        ASSERT_LE(std::abs(block[c] - cpu[c]), std::abs(cpu[c]) * 1.2e-7f + 1e-30f) << n << " at " << c;
      }
    }
  }
}

TEST(GeluErfMath, EqualsTheCpu) {
  const std::vector<float> values = random_values(20000, 9, -12.0f, 12.0f);
  for (const float v : values) ASSERT_EQ(hd::gelu_erf_value(v), cpu::gelu_erf_value(v)) << v;
  for (const float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 5.5f, -5.5f})
    EXPECT_EQ(hd::gelu_erf_value(v), cpu::gelu_erf_value(v));
}

TEST(ActivationMath, EachKindEqualsTheCpu) {
  const std::vector<float> values = random_values(20000, 10, -12.0f, 12.0f);
  for (const backend::Activation kind :
       {backend::Activation::QuickGelu, backend::Activation::GeluTanh, backend::Activation::GeluErf,
        backend::Activation::Silu, backend::Activation::Tanh}) {
    const int k = static_cast<int>(kind);
    for (const float v : values) ASSERT_EQ(hd::activation_value(k, v), cpu::activation_value(kind, v)) << k << " " << v;
    for (const float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 5.5f, -5.5f, 80.0f, -80.0f})
      EXPECT_EQ(hd::activation_value(k, v), cpu::activation_value(kind, v)) << k << " " << v;
  }
}

// encoder_ops.cu's warp for one (row, head): lane j scores keys j, j + 32, ...; the max; then
// each tile's exp(score - max) broadcast in key order, every lane adding the sum and its dims.
std::vector<float> warp_attention(const float* q, const std::vector<float>& k, const std::vector<float>& v,
                                  int64_t stride, int64_t first, int64_t count, int64_t kv_column, int64_t dim,
                                  float scale) {
  const auto key = [&](int64_t j) { return k.data() + (first + j) * stride + kv_column; };
  double most = -INFINITY;
  for (int lane = 0; lane < 32; ++lane) {
    for (int64_t j = lane; j < count; j += 32) most = std::fmax(most, hd::scaled_dot(q, key(j), dim, scale));
  }
  double sum = 0.0;
  std::vector<double> acc(static_cast<size_t>(dim), 0.0);
  for (int64_t j0 = 0; j0 < count; j0 += 32) {
    std::vector<double> prob(32, 0.0);
    for (int lane = 0; lane < 32 && j0 + lane < count; ++lane) {
      prob[static_cast<size_t>(lane)] = hd::exp_f64(hd::sub_rn(hd::scaled_dot(q, key(j0 + lane), dim, scale), most));
    }
    for (int t = 0; t < std::min<int64_t>(32, count - j0); ++t) {
      sum = hd::add_rn(sum, prob[static_cast<size_t>(t)]);
      const float* value = v.data() + (first + j0 + t) * stride + kv_column;
      for (int64_t d = 0; d < dim; ++d) {
        acc[static_cast<size_t>(d)] = hd::add_rn(
            acc[static_cast<size_t>(d)], hd::mul_rn(prob[static_cast<size_t>(t)], static_cast<double>(value[d])));
      }
    }
  }
  std::vector<float> out(static_cast<size_t>(dim));
  for (int64_t d = 0; d < dim; ++d)
    out[static_cast<size_t>(d)] = static_cast<float>(hd::div_rn(acc[static_cast<size_t>(d)], sum));
  return out;
}

TEST(BidirectionalAttentionMath, EqualsTheCpuBitForBit) {
  struct Shape {
    int64_t dim, kv_heads, rows;
  };
  for (const Shape shape : {Shape{64, 2, 7}, Shape{32, 1, 70}, Shape{128, 3, 33}, Shape{256, 1, 5}}) {
    const int64_t stride = shape.dim * shape.kv_heads;
    const std::vector<float> q = random_values(static_cast<size_t>(stride * shape.rows), 11, -1.0f, 1.0f);
    const std::vector<float> k = random_values(static_cast<size_t>(stride * shape.rows), 12, -1.0f, 1.0f);
    const std::vector<float> v = random_values(static_cast<size_t>(stride * shape.rows), 13, -2.0f, 2.0f);
    TensorView kv = f32_matrix(const_cast<float*>(k.data()), stride, shape.rows);
    TensorView vv = f32_matrix(const_cast<float*>(v.data()), stride, shape.rows);
    std::vector<double> scores;
    const float scale = 3.0f / std::sqrt(static_cast<float>(shape.dim));
    for (int64_t row = 0; row < shape.rows; ++row) {
      for (int64_t head = 0; head < shape.kv_heads; ++head) {
        // The sequence: rows [1, rows) (row 0 alone would be a trivial softmax).
        const int64_t first = row == 0 ? 0 : 1, count = row == 0 ? 1 : shape.rows - 1;
        const float* qr = q.data() + row * stride + head * shape.dim;
        std::vector<float> cpu(static_cast<size_t>(shape.dim));
        cpu::bidirectional_attention_head(qr, kv, vv, first, count, head * shape.dim, shape.dim, scale, scores,
                                          cpu.data());
        ASSERT_EQ(warp_attention(qr, k, v, stride, first, count, head * shape.dim, shape.dim, scale), cpu)
            << shape.dim << " row " << row << " head " << head;
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cuda
