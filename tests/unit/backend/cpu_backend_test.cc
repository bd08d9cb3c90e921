// The CpuBackend as the model code sees it: memory, weights in place, and every op through
// the Backend interface on 1 and 3 threads against f64 references (shapes big enough that
// the ops really split over the pool).
#include "backend/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "backend/cpu/activation.h"
#include "kernel_test_util.h"
#include "paged_cache_fixture.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend {
namespace {

using testing::random_values;

class CpuBackendTest : public ::testing::TestWithParam<unsigned> {
 protected:
  CpuBackend backend{GetParam()};
};

TEST_P(CpuBackendTest, AllocatesAlignedZeroedMemory) {
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{1} << 20}) {
    auto buffer = backend.allocate(bytes);
    EXPECT_EQ(buffer->size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
    const auto* p = static_cast<const uint8_t*>(buffer->data());
    for (size_t i = 0; i < bytes; i += 4093) EXPECT_EQ(p[i], 0);
  }
  EXPECT_EQ(backend.name(), "cpu");
}

TEST_P(CpuBackendTest, WeightsStayInPlace) {
  std::vector<uint8_t> q8(34 * 4 * 3);  // Q8_0: 34 bytes per 32 values; 3 rows of 128
  const TensorView w = backend.upload_weights(tensor::DType::Q8_0, {128, 3, 1, 1}, q8.data());
  EXPECT_EQ(w.data, q8.data());
  EXPECT_EQ(w.row_bytes, 34u * 4);
  EXPECT_THROW(backend.upload_weights(tensor::DType::Q8_0, {100, 3, 1, 1}, q8.data()), Error);
}

TEST_P(CpuBackendTest, MatmulAdaptsViews) {
  const int64_t in = 96, out = 40, tokens = 5;
  auto w = random_values(static_cast<size_t>(in * out), 1);
  auto x = random_values(static_cast<size_t>(in * tokens), 2);
  std::vector<float> y(static_cast<size_t>(out * tokens));
  const TensorView wt = backend.upload_weights(tensor::DType::F32, {in, out, 1, 1}, w.data());
  TensorView yt = f32_matrix(y.data(), out, tokens);
  backend.matmul(wt, f32_matrix(x.data(), in, tokens), yt);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < out; ++r) {
      double want = 0.0;
      for (int64_t c = 0; c < in; ++c) want += static_cast<double>(w[r * in + c]) * x[t * in + c];
      EXPECT_NEAR(y[t * out + r], want, 1e-4) << t << "," << r;
    }
  }
  TensorView wrong = f32_matrix(y.data(), out + 1, tokens);
  EXPECT_THROW(backend.matmul(wt, f32_matrix(x.data(), in, tokens), wrong), Error);
}

TEST_P(CpuBackendTest, GetRowsDequantizesTheNamedRows) {
  const int64_t n = 64, rows = 50;
  const auto values = random_values(static_cast<size_t>(n * rows), 3);
  std::vector<uint8_t> q4(static_cast<size_t>(rows) * 2 * 18);  // Q4_0: 18 bytes per 32 values
  for (int64_t r = 0; r < rows; ++r) {
    tensor::quantize_row(tensor::DType::Q4_0, values.data() + r * n, q4.data() + r * 36, n);
  }
  const TensorView table = backend.upload_weights(tensor::DType::Q4_0, {n, rows, 1, 1}, q4.data());
  const std::vector<int32_t> ids = {49, 0, 7, 7, 23};
  std::vector<float> out(static_cast<size_t>(n) * ids.size());
  TensorView ot = f32_matrix(out.data(), n, static_cast<int64_t>(ids.size()));
  backend.get_rows(table, ids, ot);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<float> want(static_cast<size_t>(n));
    tensor::dequantize_row(tensor::DType::Q4_0, q4.data() + ids[i] * 36, want.data(), n);
    for (int64_t d = 0; d < n; ++d) EXPECT_EQ(out[i * n + d], want[static_cast<size_t>(d)]);
    // And it is the row that was quantized (Q4_0's step is max/8).
    for (int64_t d = 0; d < n; ++d) EXPECT_NEAR(out[i * n + d], values[ids[i] * n + d], 0.13);
  }
  const std::vector<int32_t> bad = {50};
  EXPECT_THROW(backend.get_rows(table, bad, ot), Error);
  const std::vector<int32_t> negative = {-1};
  EXPECT_THROW(backend.get_rows(table, negative, ot), Error);
}

TEST_P(CpuBackendTest, PointwiseOpsOnBigBatches) {
  const int64_t n = 1536, rows = 67;  // big enough to split rows and parts of rows
  const auto a = random_values(static_cast<size_t>(n * rows), 4, -4.0f, 4.0f);
  const auto b = random_values(static_cast<size_t>(n * rows), 5, -4.0f, 4.0f);
  auto weight = random_values(static_cast<size_t>(n), 6);
  std::vector<float> out(a.size());
  auto A = a, B = b;
  const TensorView at = f32_matrix(A.data(), n, rows), bt = f32_matrix(B.data(), n, rows);
  TensorView ot = f32_matrix(out.data(), n, rows);

  backend.add(at, bt, ot);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(out[i], a[i] + b[i]);

  backend.swiglu(at, bt, ot);
  for (size_t i = 0; i < a.size(); ++i) {
    const double want = a[i] / (1.0 + std::exp(-static_cast<double>(a[i]))) * b[i];
    ASSERT_NEAR(out[i], want, 1e-6 * std::abs(want) + 1e-30);
  }
  backend.geglu(at, bt, ot);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(out[i], cpu::gelu_tanh_like_ggml(a[i]) * b[i]);

  backend.rms_norm(at, f32_matrix(weight.data(), n, 1), 1e-6f, ot);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int64_t d = 0; d < n; ++d) sum += static_cast<double>(a[r * n + d]) * a[r * n + d];
    const double inv = 1.0 / std::sqrt(sum / n + 1e-6);
    for (int64_t d = 0; d < n; ++d) {
      const double want = a[r * n + d] * inv * weight[d];
      ASSERT_NEAR(out[r * n + d], want, 4e-7 * std::abs(want) + 1e-30);
    }
  }

  TensorView x = f32_matrix(A.data(), n, rows);
  backend.add_row(x, f32_matrix(weight.data(), n, 1));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(A[i], a[i] + weight[i % n]);
  backend.scale(x, 0.5f);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(A[i], (a[i] + weight[i % n]) * 0.5f);

  TensorView mismatched = f32_matrix(out.data(), n, rows - 1);
  EXPECT_THROW(backend.add(at, bt, mismatched), Error);
}

TEST_P(CpuBackendTest, RopeRotatesEveryHeadOfEveryToken) {
  const int64_t dim = 64, heads = 9, tokens = 11;
  auto x = random_values(static_cast<size_t>(dim * heads * tokens), 7);
  const auto original = x;
  std::vector<int32_t> positions(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) positions[static_cast<size_t>(t)] = static_cast<int32_t>(5 * t + 3);
  TensorView xt{tensor::DType::F32, {dim, heads, tokens, 1}, dim * 4, x.data()};
  RopeConfig c;
  c.rope_dims = dim;
  c.neox = true;
  backend.rope(xt, positions, c);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < dim / 2; ++i) {
        const double angle = positions[static_cast<size_t>(t)] * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
        const size_t base = static_cast<size_t>((t * heads + h) * dim);
        const double x0 = original[base + i], x1 = original[base + i + dim / 2];
        EXPECT_NEAR(x[base + i], x0 * std::cos(angle) - x1 * std::sin(angle), 5e-5);
        EXPECT_NEAR(x[base + i + dim / 2], x0 * std::sin(angle) + x1 * std::cos(angle), 5e-5);
      }
    }
  }
  positions.pop_back();
  EXPECT_THROW(backend.rope(xt, positions, c), Error);
}

TEST_P(CpuBackendTest, StoreThenAttendThroughTheInterface) {
  // One token per sequence, each the first of its sequence: attention must return its own V.
  const int64_t dim = 64, kv_heads = 3, heads = 9, kv_dim = dim * kv_heads;
  testing::PagedCache cache(tensor::DType::F16, kv_dim, 16, 4);
  auto k = random_values(static_cast<size_t>(kv_dim * 2), 8);
  auto v = random_values(static_cast<size_t>(kv_dim * 2), 9);
  const std::vector<int32_t> table_a = {2}, table_b = {0};
  const std::vector<SequenceSlice> seqs = {{0, 1, 0, table_a}, {1, 1, 0, table_b}};
  backend.store_kv(f32_matrix(k.data(), kv_dim, 2), f32_matrix(v.data(), kv_dim, 2), seqs, cache.layer());
  auto q = random_values(static_cast<size_t>(dim * heads * 2), 10);
  std::vector<float> out(q.size());
  const TensorView qt{tensor::DType::F32, {dim, heads, 2, 1}, dim * 4, q.data()};
  TensorView ot{tensor::DType::F32, {dim, heads, 2, 1}, dim * 4, out.data()};
  AttentionConfig c{heads, kv_heads, dim, 0.125f, 0, 0.0f};
  backend.attention(qt, cache.layer(), seqs, c, ot);
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t d = 0; d < dim; ++d) {
        const float want = testing::round_to_f16(v[static_cast<size_t>(t * kv_dim + (h / 3) * dim + d)]);
        ASSERT_EQ(out[static_cast<size_t>((t * heads + h) * dim + d)], want);
      }
    }
  }
}

TEST_P(CpuBackendTest, CopyToHostWidens) {
  std::vector<uint16_t> half = {0x3c00, 0xc000, 0x3800, 0x0000};  // 1, -2, 0.5, 0
  const TensorView t = backend.upload_weights(tensor::DType::F16, {2, 2, 1, 1}, half.data());
  std::vector<float> dst(4);
  backend.copy_to_host(t, dst.data());
  EXPECT_EQ(dst, (std::vector<float>{1.0f, -2.0f, 0.5f, 0.0f}));
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuBackendTest, ::testing::Values(1u, 3u));

// The CPU has no device time apart from its own: timing steps counts none (the benchmarks then
// report no device time), and, as on a device, cannot be switched inside a step.
TEST(CpuBackendStepTiming, CountsNoDeviceTimeAndRefusesInsideAStep) {
  CpuBackend backend(1);
  backend.time_steps(true);
  std::vector<int32_t> tokens = {1}, positions = {0};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  backend.begin_step(step);
  EXPECT_THROW(backend.time_steps(false), Error);
  backend.end_step();
  backend.time_steps(false);
  EXPECT_EQ(backend.step_device_time().steps, 0u);
  EXPECT_EQ(backend.step_device_time().seconds, 0.0);
}

// The CPU's op clock is the host's (its ops are done when they return): marks count from the
// first, only while timing is on, and a take empties them; it has no device limits to measure.
TEST(CpuBackendOpTiming, MarksTheHostClockWhileOnAndRefusesInsideAStep) {
  CpuBackend backend(1);
  EXPECT_FALSE(backend.measure_device_ceilings().has_value());
  backend.mark_op_time();  // off: not kept
  ASSERT_TRUE(backend.time_ops(true));
  backend.mark_op_time();
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  backend.mark_op_time();
  const std::vector<double> marks = backend.take_op_times();
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0], 0.0);
  EXPECT_GE(marks[1], 3e6);
  EXPECT_LT(marks[1], 10e9);
  EXPECT_TRUE(backend.take_op_times().empty());

  std::vector<int32_t> tokens = {1}, positions = {0};
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  backend.begin_step(step);
  backend.mark_op_time();  // inside a step is where marks belong
  EXPECT_THROW(backend.time_ops(false), Error);
  EXPECT_THROW(backend.take_op_times(), Error);
  backend.end_step();
  EXPECT_EQ(backend.take_op_times().size(), 1u);
  EXPECT_TRUE(backend.time_ops(false));
  backend.mark_op_time();
  EXPECT_TRUE(backend.take_op_times().empty());
}

}  // namespace
}  // namespace lumen::backend
