// The CUDA backend's row-wise ops against the CPU backend on the same random inputs: add,
// add_row, scale, swiglu, geglu, rms_norm, get_rows / copy_to_host for every supported table
// type, and rope in every mode. Odd widths, one and many rows, rows wider than their data.
//
// Tolerances: add, add_row, scale, geglu (the same f16 table), get_rows and copy_to_host (the
// reference dequantizers' arithmetic) must be bit-exact. swiglu may differ by the two expf
// implementations (a few ulp: 5e-6 relative); rms_norm by the order of its double sum (1e-6);
// rope by the cos / sin implementations and YaRN's f32 steps (2e-6 of the largest value).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>
#include <span>
#include <vector>

#include "cuda_test_util.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A host f32 matrix with `pad` unused floats after each row, and its device copy.
struct Matrix {
  int64_t cols, rows, stride;
  std::vector<float> host;
  TensorView host_view() {
    return {DType::F32, {cols, rows, 1, 1}, static_cast<size_t>(stride) * 4, host.data()};
  }
};

Matrix random_matrix(int64_t cols, int64_t rows, int64_t pad, uint32_t seed, float lo = -2.0f,
                     float hi = 2.0f) {
  Matrix m{cols, rows, cols + pad,
           random_floats(static_cast<size_t>((cols + pad) * rows), seed, lo, hi)};
  return m;
}

// The rows x cols values of a host view, stride dropped.
std::vector<float> dense(const TensorView& v) {
  std::vector<float> out;
  for (int64_t r = 0; r < v.rows(); ++r) {
    for (int64_t c = 0; c < v.dims[0]; ++c) out.push_back(at(v, r, c));
  }
  return out;
}

using Shape = std::tuple<int64_t, int64_t>;  // cols, rows

class CudaPointwise : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
  int64_t cols() const { return std::get<0>(GetParam()); }
  int64_t rows() const { return std::get<1>(GetParam()); }
};

TEST_P(CudaPointwise, AddAddRowScaleAreExact) {
  Matrix a = random_matrix(cols(), rows(), 3, 1), b = random_matrix(cols(), rows(), 0, 2);
  Matrix row = random_matrix(cols(), 1, 0, 3);
  Matrix out = random_matrix(cols(), rows(), 1, 4);
  DeviceTensor da = to_device(a.host_view()), db = to_device(b.host_view()),
               drow = to_device(row.host_view());
  DeviceTensor dout = to_device(out.host_view());

  TensorView ha = a.host_view(), hb = b.host_view(), hrow = row.host_view(), hout = out.host_view();
  cpu().add(ha, hb, hout);
  gpu()->add(da.view, db.view, dout.view);
  EXPECT_EQ(dense(hout), download_f32(dout.view)) << "add";

  cpu().add_row(ha, hrow);
  gpu()->add_row(da.view, drow.view);
  EXPECT_EQ(dense(ha), download_f32(da.view)) << "add_row";

  cpu().scale(ha, -0.37f);
  gpu()->scale(da.view, -0.37f);
  EXPECT_EQ(dense(ha), download_f32(da.view)) << "scale";

  // In place, as the model calls it: x = x + h.
  cpu().add(ha, hb, ha);
  gpu()->add(da.view, db.view, da.view);
  EXPECT_EQ(dense(ha), download_f32(da.view)) << "add in place";
}

// rotate_heads (a rotated KV cache's keys, values and queries): the CPU's butterflies in its
// order, so bit for bit, for every power-of-two head width the attention takes, rows padded.
TEST(CudaRotateHeads, MatchesTheCpuBitForBit) {
  LUMEN_REQUIRE_CUDA();
  for (int64_t head : {32, 64, 128, 256}) {
    for (int64_t rows : {1, 7}) {
      const int64_t cols = head * 3;
      Matrix x = random_matrix(cols, rows, 5, static_cast<uint32_t>(head + rows), -4.0f, 4.0f);
      DeviceTensor dx = to_device(x.host_view());
      TensorView hx = x.host_view();
      cpu().rotate_heads(hx, head);
      gpu()->rotate_heads(dx.view, head);
      EXPECT_EQ(dense(hx), download_f32(dx.view)) << "head_dim " << head << ", " << rows << " rows";
    }
  }
}

TEST_P(CudaPointwise, GatedActivations) {
  Matrix gate = random_matrix(cols(), rows(), 2, 5, -12.0f, 12.0f),
         up = random_matrix(cols(), rows(), 0, 6);
  DeviceTensor dgate = to_device(gate.host_view()), dup = to_device(up.host_view());
  Matrix out = random_matrix(cols(), rows(), 0, 7);
  DeviceTensor dout = to_device(out.host_view());
  TensorView hg = gate.host_view(), hu = up.host_view(), ho = out.host_view();

  cpu().swiglu(hg, hu, ho);
  gpu()->swiglu(dgate.view, dup.view, dout.view);
  expect_elementwise_close(dense(ho), download_f32(dout.view), 5e-6, 1e-30, "swiglu");

  cpu().geglu(hg, hu, ho);
  gpu()->geglu(dgate.view, dup.view, dout.view);
  EXPECT_EQ(dense(ho), download_f32(dout.view)) << "geglu";

  // In place over the gate, as the model calls them.
  cpu().swiglu(hg, hu, hg);
  gpu()->swiglu(dgate.view, dup.view, dgate.view);
  expect_elementwise_close(dense(hg), download_f32(dgate.view), 5e-6, 1e-30, "swiglu in place");
}

TEST_P(CudaPointwise, RmsNorm) {
  Matrix x = random_matrix(cols(), rows(), 4, 8, -30.0f, 30.0f), w = random_matrix(cols(), 1, 0, 9);
  Matrix out = random_matrix(cols(), rows(), 0, 10);
  DeviceTensor dx = to_device(x.host_view()), dw = to_device(w.host_view()),
               dout = to_device(out.host_view());
  TensorView hx = x.host_view(), hw = w.host_view(), ho = out.host_view();
  cpu().rms_norm(hx, hw, 1e-5f, ho);
  gpu()->rms_norm(dx.view, dw.view, 1e-5f, dout.view);
  expect_elementwise_close(dense(ho), download_f32(dout.view), 1e-6, 1e-30, "rms_norm");
  cpu().rms_norm(hx, hw, 1e-6f, hx);  // in place
  gpu()->rms_norm(dx.view, dw.view, 1e-6f, dx.view);
  expect_elementwise_close(dense(hx), download_f32(dx.view), 1e-6, 1e-30, "rms_norm in place");
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaPointwise,
                         ::testing::Values(Shape{1, 1}, Shape{7, 3}, Shape{576, 1}, Shape{1000, 17},
                                           Shape{4096, 5}, Shape{1536, 64}));

// ---- get_rows and copy_to_host over every table type ----

using TableCase = std::tuple<DType, int64_t>;  // type, cols

class CudaRows : public ::testing::TestWithParam<TableCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaRows, GetRowsAndCopyToHostAreExact) {
  const auto [type, cols] = GetParam();
  const int64_t rows = 37;
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> table(row_bytes * rows);
  const std::vector<float> values =
      random_floats(static_cast<size_t>(cols * rows), 11, -3.0f, 3.0f);
  for (int64_t r = 0; r < rows; ++r) {
    tensor::quantize_row(type, values.data() + r * cols,
                         table.data() + r * static_cast<int64_t>(row_bytes), cols);
  }
  const TensorView host_table{type, {cols, rows, 1, 1}, row_bytes, table.data()};
  const TensorView device_table = gpu()->upload_weights(type, {cols, rows, 1, 1}, table.data());

  const std::vector<int32_t> ids = {5, 0, 36, 5, 17, 1, 30};
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<float> host_out(static_cast<size_t>((cols + 2) * n));
  TensorView hout{DType::F32, {cols, n, 1, 1}, static_cast<size_t>(cols + 2) * 4, host_out.data()};
  DeviceTensor dout = device_matrix(cols, n, cols + 2);
  cpu().get_rows(host_table, ids, hout);
  gpu()->get_rows(device_table, ids, dout.view);
  EXPECT_EQ(dense(hout), download_f32(dout.view)) << tensor::dtype_name(type);

  std::vector<float> expected(static_cast<size_t>(cols * rows)), got(expected.size());
  cpu().copy_to_host(host_table, expected.data());
  gpu()->copy_to_host(device_table, got.data());
  EXPECT_EQ(expected, got) << "copy_to_host " << tensor::dtype_name(type);
}

INSTANTIATE_TEST_SUITE_P(
    Types, CudaRows,
    ::testing::Values(TableCase{DType::F32, 100}, TableCase{DType::F16, 66}, TableCase{DType::BF16, 130},
                      TableCase{DType::Q4_0, 96}, TableCase{DType::Q4_1, 576}, TableCase{DType::Q5_0, 160},
                      TableCase{DType::Q5_1, 96}, TableCase{DType::Q8_0, 64}, TableCase{DType::Q8_1, 64},
                      TableCase{DType::Q2_K, 256}, TableCase{DType::Q3_K, 512}, TableCase{DType::Q4_K, 512},
                      TableCase{DType::Q5_K, 768}, TableCase{DType::Q6_K, 768}, TableCase{DType::Q8_K, 256}));

// ---- rope ----

struct RopeCase {
  const char* name;
  int64_t head_dim, rope_dims;
  bool neox;
  RopeScalingType scaling;
  bool freq_factors;
};

void PrintTo(const RopeCase& c, std::ostream* os) { *os << c.name; }

class CudaRope : public ::testing::TestWithParam<RopeCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaRope, MatchesCpu) {
  const RopeCase c = GetParam();
  const int64_t heads = 5, tokens = 9;
  std::vector<float> x =
      random_floats(static_cast<size_t>(c.head_dim * heads * tokens), 12, -2.0f, 2.0f);
  TensorView hx{
      DType::F32, {c.head_dim, heads, tokens, 1}, static_cast<size_t>(c.head_dim) * 4, x.data()};
  DeviceTensor dx = to_device(hx);
  const std::vector<int32_t> positions = {0, 1, 2, 17, 511, 4095, 8191, 30000, 131071};
  std::vector<float> factors(static_cast<size_t>(c.rope_dims / 2));
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.37f * static_cast<float>(i % 7);

  RopeConfig config;
  config.rope_dims = c.rope_dims;
  config.neox = c.neox;
  config.freq_base = 500000.0;
  config.scaling = c.scaling;
  config.scaling_factor = c.scaling == RopeScalingType::None ? 1.0 : 4.0;
  config.original_context = 8192;
  config.freq_factors = c.freq_factors ? factors.data() : nullptr;
  cpu().rope(hx, positions, config);
  gpu()->rope(dx.view, positions, config);  // freq_factors from host memory
  const std::vector<float> expected(x.begin(), x.end());
  EXPECT_LE(max_relative_difference(expected, download_f32(dx.view)), 2e-6) << c.name;

  if (c.freq_factors) {
    // The model passes the rope_freqs weight, which lives in device memory.
    const TensorView device_factors = gpu()->upload_weights(
        DType::F32, {static_cast<int64_t>(factors.size()), 1, 1, 1}, factors.data());
    RopeConfig device_config = config;
    device_config.freq_factors = static_cast<const float*>(device_factors.data);
    cpu().rope(hx, positions, config);
    gpu()->rope(dx.view, positions, device_config);
    const std::vector<float> twice(x.begin(), x.end());
    EXPECT_LE(max_relative_difference(twice, download_f32(dx.view)), 4e-6)
        << c.name << " (device factors)";
  }
}

// CudaBackendOptions::rope_loads_first: each thread's pairs loaded before any is rotated, the
// same bits as pair by pair, for 1 token (a decode step: 32 heads, 8 pairs a thread) and many,
// with rows wider than their data (a Q/K/V row's view).
TEST_P(CudaRope, LoadsFirstGivesThePairByPairBits) {
  const RopeCase c = GetParam();
  const CudaBackendOptions saved = gpu()->options();
  for (const int64_t tokens : {int64_t{1}, int64_t{7}}) {
    const int64_t heads = 32, stride = c.head_dim + 3;
    std::vector<float> x = random_floats(static_cast<size_t>(stride * heads * tokens), 13, -2.0f, 2.0f);
    TensorView hx{DType::F32, {c.head_dim, heads, tokens, 1}, static_cast<size_t>(stride) * 4, x.data()};
    const std::vector<int32_t> positions = {5, 1, 2, 17, 511, 4095, 131071};
    std::vector<float> factors(static_cast<size_t>(c.rope_dims / 2));
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.37f * static_cast<float>(i % 7);
    RopeConfig config;
    config.rope_dims = c.rope_dims;
    config.neox = c.neox;
    config.scaling = c.scaling;
    config.scaling_factor = c.scaling == RopeScalingType::None ? 1.0 : 4.0;
    config.original_context = 8192;
    config.freq_factors = c.freq_factors ? factors.data() : nullptr;
    std::vector<uint8_t> results[2];
    for (const bool on : {false, true}) {
      CudaBackendOptions options = saved;
      options.rope_loads_first = on;
      gpu()->set_options(options);
      DeviceTensor dx = to_device(hx);
      gpu()->rope(dx.view, std::span<const int32_t>(positions.data(), static_cast<size_t>(tokens)), config);
      results[on] = download_bytes(dx.view);
    }
    gpu()->set_options(saved);
    EXPECT_EQ(results[1], results[0]) << c.name << ", " << tokens << " tokens";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CudaRope,
    ::testing::Values(RopeCase{"normal", 64, 64, false, RopeScalingType::None, false},
                      RopeCase{"neox", 128, 128, true, RopeScalingType::None, false},
                      RopeCase{"partial_neox", 96, 32, true, RopeScalingType::None, false},
                      RopeCase{"linear", 64, 64, false, RopeScalingType::Linear, false},
                      RopeCase{"yarn", 128, 128, true, RopeScalingType::Yarn, false},
                      RopeCase{"llama3_factors", 128, 128, false, RopeScalingType::None, true}),
    [](const ::testing::TestParamInfo<RopeCase>& case_info) {
      return std::string(case_info.param.name);
    });

TEST(CudaBackendErrors, RefusesHostTensorsAndTypesWithoutKernels) {
  LUMEN_REQUIRE_CUDA();
  std::vector<float> host(16, 1.0f);
  TensorView h = f32_matrix(host.data(), 16, 1);
  EXPECT_THROW(gpu()->scale(h, 2.0f), Error);
  // One IQ2_XXS super-block (256 values in 66 bytes): a format with no kernels anywhere.
  std::vector<uint8_t> iq2(tensor::dtype_info(DType::IQ2_XXS).block_bytes);
  const TensorView w = gpu()->upload_weights(DType::IQ2_XXS, {256, 1, 1, 1}, iq2.data());
  DeviceTensor x = device_matrix(256, 1, 256), y = device_matrix(1, 1, 1);
  const std::vector<int32_t> ids = {0};
  EXPECT_THROW(gpu()->get_rows(w, ids, x.view), Error);
  EXPECT_THROW(gpu()->matmul(w, x.view, y.view), Error);
}

}  // namespace
}  // namespace lumen::backend::testing
