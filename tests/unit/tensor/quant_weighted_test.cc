// The importance-weighted quantizers (tensor/quantize.h's quantize_rows_ggml with an importance
// vector). Their bytes are compared with llama-quantize --imatrix's by
// tests/python/test_cli_imatrix.py; these check what the weighting is for, on every type: the
// columns that matter most come back closer than they do when every column matters alike, the
// whole row still decodes near the original, and without importance the bytes are
// quantize_row_ggml's. Run under ASan + UBSan in the debug build like every unit test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace lumen::tensor {
namespace {

constexpr int64_t kColumns = 512;
constexpr int64_t kRows = 8;

std::vector<float> row_values(uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(kColumns * kRows));
  uint32_t state = seed;
  for (float& v : out) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  }
  return out;
}

// Squared error over the columns where `important` is set (or not), every row.
double squared_error(const std::vector<float>& a, const std::vector<float>& b, bool important) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool is_important = (i % kColumns) % 8 == 0;
    if (is_important != important) continue;
    sum += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  }
  return sum;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x, const float* importance) {
  const auto row_size = static_cast<size_t>(*row_bytes(type, kColumns));
  std::vector<uint8_t> packed(row_size * kRows);
  quantize_rows_ggml(type, x.data(), packed.data(), kRows, kColumns, importance);
  std::vector<float> back(x.size());
  dequantize_row(type, packed.data(), back.data(), static_cast<int64_t>(x.size()));
  return back;
}

class WeightedQuantizer : public testing::TestWithParam<DType> {};

TEST_P(WeightedQuantizer, ImportantColumnsComeBackCloser) {
  const DType type = GetParam();
  const std::vector<float> x = row_values(17);
  std::vector<float> uniform(kColumns, 1.0f);
  std::vector<float> skewed(kColumns, 1.0f);
  for (int64_t c = 0; c < kColumns; c += 8) skewed[static_cast<size_t>(c)] = 1000.0f;
  const std::vector<float> plain = round_trip(type, x, uniform.data());
  const std::vector<float> weighted = round_trip(type, x, skewed.data());
  EXPECT_LT(squared_error(x, weighted, true), squared_error(x, plain, true)) << dtype_name(type);
  // The other columns pay for it (with a weight of 1000 on an eighth of them, up to 2.5 times
  // the error at 2 bits), but the row as a whole still decodes near the original.
  const double error = squared_error(x, weighted, false) + squared_error(x, weighted, true);
  double energy = 0.0;
  for (float v : x) energy += static_cast<double>(v) * v;
  EXPECT_LT(std::sqrt(error / energy), 0.5) << dtype_name(type);
}

TEST_P(WeightedQuantizer, WithoutImportanceTheBytesAreTheReferenceQuantizers) {
  const DType type = GetParam();
  const std::vector<float> x = row_values(5);
  const auto bytes = static_cast<size_t>(*row_bytes(type, kColumns)) * kRows;
  std::vector<uint8_t> reference(bytes), rows(bytes);
  quantize_row_ggml(type, x.data(), reference.data(), kColumns * kRows);
  quantize_rows_ggml(type, x.data(), rows.data(), kRows, kColumns, nullptr);
  EXPECT_EQ(rows, reference);
}

INSTANTIATE_TEST_SUITE_P(Types, WeightedQuantizer,
                         testing::Values(DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q4_0,
                                         DType::Q4_1, DType::Q5_0, DType::Q5_1),
                         [](const testing::TestParamInfo<DType>& type) { return std::string(dtype_name(type.param)); });

// Q8_0 has no weighted search in ggml: the importance is ignored.
TEST(WeightedQuantizer, Q8_0IgnoresImportance) {
  const std::vector<float> x = row_values(9);
  std::vector<float> skewed(kColumns, 1.0f);
  skewed[0] = 1000.0f;
  EXPECT_EQ(round_trip(DType::Q8_0, x, skewed.data()), round_trip(DType::Q8_0, x, nullptr));
}

}  // namespace
}  // namespace lumen::tensor
