// The CPU backend packs a weight matrix (matmul_packed.h) only while the memory available covers
// the packed copy, the backend's lazily backed buffers (the KV pool) in full, and a reserve
// (pack_budget.h); a matrix it refuses runs on the file's layout, with the same results up to
// rounding.
#include "backend/cpu/pack_budget.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul_packed.h"
#include "kernel_test_util.h"
#include "tensor/block_formats.h"
#include "tensor/quantize.h"

namespace lumen::backend {
namespace {

using testing::random_values;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(PackBudget, AllowsWhileTheAvailableMemoryCoversTheCopyThePromiseAndTheReserve) {
  const cpu::PackBudget laptop{10 * kGiB, 16 * kGiB, 3 * kGiB};
  EXPECT_EQ(laptop.reserve(), 1 * kGiB);  // 1/16 of the RAM
  EXPECT_TRUE(laptop.allows(6 * kGiB));
  EXPECT_FALSE(laptop.allows(6 * kGiB + 1));
  const cpu::PackBudget small{1 * kGiB, 2 * kGiB, 0};
  EXPECT_EQ(small.reserve(), cpu::PackBudget::kMinReserve);
  EXPECT_TRUE(small.allows(1 * kGiB - cpu::PackBudget::kMinReserve));
  EXPECT_FALSE(small.allows(1 * kGiB - cpu::PackBudget::kMinReserve + 1));
  // Without /proc/meminfo nothing is known, and packing goes on as before.
  EXPECT_TRUE((cpu::PackBudget{0, 0, 100 * kGiB}.allows(100 * kGiB)));
}

// A random Q4_0 matrix of rows x cols, quantized.
std::vector<uint8_t> q4_0_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  const auto values = random_values(static_cast<size_t>(rows * cols), seed);
  const size_t row_bytes = static_cast<size_t>(cols / 32) * sizeof(tensor::BlockQ4_0);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    tensor::quantize_row(tensor::DType::Q4_0, values.data() + r * cols, bytes.data() + row_bytes * r, cols);
  }
  return bytes;
}

class CpuPackBudget : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 256, kCols = 512, kTokens = 3;

  void SetUp() override {
    if (!cpu::packing_pays_off(tensor::DType::Q4_0)) GTEST_SKIP() << "this CPU has no packed kernels";
    for (uint32_t m = 0; m < 3; ++m) matrices_.push_back(q4_0_matrix(kRows, kCols, 10 + m));
    x_ = random_values(static_cast<size_t>(kCols * kTokens), 20);
  }

  TensorView upload(CpuBackend& backend, const std::vector<uint8_t>& w) {
    return backend.upload_weights(tensor::DType::Q4_0, {kCols, kRows, 1, 1}, w.data());
  }
  // y = W x through the backend.
  std::vector<float> multiply(CpuBackend& backend, const TensorView& wt) {
    std::vector<float> y(static_cast<size_t>(kRows * kTokens));
    TensorView yt = f32_matrix(y.data(), kRows, kTokens);
    backend.matmul(wt, f32_matrix(x_.data(), kCols, kTokens), yt);
    return y;
  }

  const size_t packed_ = cpu::packed_matrix_bytes(tensor::DType::Q4_0, kRows, kCols);
  std::vector<std::vector<uint8_t>> matrices_;
  std::vector<float> x_;
};

// Room for one copy and a half: the first matrix packs; with a 1 MiB buffer alive (mapped, so
// promised in full) the second does not, and says so once on stderr; once the buffer is gone the
// third packs again. The refused matrix's products equal the packed ones' up to rounding.
TEST_F(CpuPackBudget, PacksWhileTheBudgetAllowsAndCountsLazyBuffersAsPromised) {
  CpuBackend backend(2);
  const uint64_t available = cpu::PackBudget::kMinReserve + packed_ + packed_ / 2;
  backend.set_memory_probe([available] { return CpuBackend::MemoryReport{available, 0}; });
  CpuBackend generous(2);
  generous.set_memory_probe([] { return CpuBackend::MemoryReport{1024 * kGiB, 1024 * kGiB}; });

  std::vector<TensorView> w;
  for (const auto& m : matrices_) w.push_back(upload(backend, m));
  multiply(backend, w[0]);
  EXPECT_EQ(backend.packed_bytes(), packed_);
  EXPECT_EQ(backend.unpacked_bytes(), 0u);

  {
    auto kv_pool = backend.allocate(1 * kMiB);  // mapped: backed only as it is touched
    ::testing::internal::CaptureStderr();
    const std::vector<float> unpacked = multiply(backend, w[1]);
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(backend.packed_bytes(), packed_);
    EXPECT_EQ(backend.unpacked_bytes(), packed_);
    EXPECT_NE(said.find("stay in the file's layout"), std::string::npos) << said;
    const std::vector<float> packed = multiply(generous, upload(generous, matrices_[1]));
    ASSERT_GT(generous.packed_bytes(), 0u);
    for (size_t i = 0; i < packed.size(); ++i) {
      EXPECT_NEAR(unpacked[i], packed[i], 1e-4 * (1.0 + std::fabs(packed[i]))) << i;
    }
    // A refused matrix stays refused (no second message either).
    ::testing::internal::CaptureStderr();
    multiply(backend, w[1]);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(backend.unpacked_bytes(), packed_);
  }
  multiply(backend, w[2]);
  EXPECT_EQ(backend.packed_bytes(), 2 * packed_);
}

}  // namespace
}  // namespace lumen::backend
