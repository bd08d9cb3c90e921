// quantize_row_ggml against llama.cpp's ggml itself, on rows that stress the edge cases of the
// scale searches: all zeros (the "empty group" paths), constants (a zero range), exact ties
// (alternating +-1), magnitudes near f16's limits and far below them (below ggml's 1e-15
// "all zero" threshold, and f16-subnormal scales), isolated spikes, and bell-shaped and
// all-positive random rows. The expected hashes come from ggml_quantize_chunk
// (scripts/make_quant_row_golden.py -> ggml_quant_golden.inc); a hash, not the bytes, to keep
// the file small: a mismatch is investigated with quant_tool quantize-ggml.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::tensor {
namespace {

constexpr int kRow = 512;

struct Golden {
  std::string_view type;
  std::string_view row;
  uint64_t fnv1a64;
};

constexpr Golden kGolden[] = {
#include "unit/tensor/ggml_quant_golden.inc"
};

// The script's lcg_uniform: values in [-0.5, 0.5) from the top 24 bits of an MMIX LCG.
std::vector<double> lcg_uniform(int n, uint64_t seed) {
  std::vector<double> out(static_cast<size_t>(n));
  uint64_t state = seed;
  for (double& value : out) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    value = static_cast<double>(state >> 40) / static_cast<double>(1 << 24) - 0.5;
  }
  return out;
}

std::vector<double> bell(int n, uint64_t seed) {
  const std::vector<double> u = lcg_uniform(4 * n, seed);
  std::vector<double> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) out[i] = u[4 * i] + u[4 * i + 1] + u[4 * i + 2] + u[4 * i + 3];
  return out;
}

std::vector<double> scaled(double factor, std::vector<double> values) {
  for (double& v : values) v = factor * v;
  return values;
}

// The script's ROWS, by name.
std::vector<float> edge_row(std::string_view name) {
  std::vector<double> x(kRow, 0.0);
  if (name == "constant_positive") x.assign(kRow, 0.5);
  if (name == "constant_negative") x.assign(kRow, -3.0);
  if (name == "alternating_ones") {
    for (int i = 0; i < kRow; ++i) x[static_cast<size_t>(i)] = i % 2 == 0 ? 1.0 : -1.0;
  }
  if (name == "bell") x = bell(kRow, 1);
  if (name == "positive") {
    x = lcg_uniform(kRow, 2);
    for (double& v : x) v = 1.0 + v;
  }
  if (name == "huge") x = scaled(1e6, bell(kRow, 3));
  if (name == "tiny") x = scaled(1e-30, bell(kRow, 4));
  if (name == "f16_subnormal_scales") x = scaled(1e-6, bell(kRow, 5));
  if (name == "spikes") {
    x[37] = 100.0;
    x[300] = -50.0;
    x[301] = 0.25;
  }
  std::vector<float> row(x.size());
  for (size_t i = 0; i < x.size(); ++i) row[i] = static_cast<float>(x[i]);
  return row;
}

uint64_t fnv1a64(const std::vector<unsigned char>& bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const unsigned char b : bytes) hash = (hash ^ b) * 0x100000001b3ULL;
  return hash;
}

TEST(QuantizeRowGgml, EdgeRowsEqualGgmlByteForByte) {
  ASSERT_EQ(std::size(kGolden), 12u * 10u);  // every type, every row
  for (const Golden& golden : kGolden) {
    const DType type = dtype_from_name(golden.type).value();
    const std::vector<float> row = edge_row(golden.row);
    std::vector<unsigned char> bytes(row_bytes(type, kRow).value());
    quantize_row_ggml(type, row.data(), bytes.data(), kRow);
    EXPECT_EQ(fnv1a64(bytes), golden.fnv1a64) << golden.type << " " << golden.row;
  }
}

// Rows are independent: quantizing two rows at once gives each row's bytes.
TEST(QuantizeRowGgml, RowsAreIndependent) {
  const std::vector<float> a = edge_row("bell");
  const std::vector<float> b = edge_row("spikes");
  std::vector<float> both(a);
  both.insert(both.end(), b.begin(), b.end());
  for (const DType type : {DType::Q4_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q6_K}) {
    const size_t size = row_bytes(type, kRow).value();
    std::vector<unsigned char> one(size), two(size), joint(2 * size);
    quantize_row_ggml(type, a.data(), one.data(), kRow);
    quantize_row_ggml(type, b.data(), two.data(), kRow);
    quantize_row_ggml(type, both.data(), joint.data(), 2 * kRow);
    one.insert(one.end(), two.begin(), two.end());
    EXPECT_EQ(joint, one) << dtype_name(type);
  }
}

TEST(QuantizeRowGgml, RefusesWhatLlamaQuantizeNeverWrites) {
  std::vector<float> row(256, 1.0f);
  std::vector<unsigned char> bytes(1024);
  EXPECT_FALSE(has_ggml_quantizer(DType::Q8_K));
  EXPECT_FALSE(has_ggml_quantizer(DType::IQ2_XXS));
  EXPECT_TRUE(has_ggml_quantizer(DType::Q4_K));
  EXPECT_THROW(quantize_row_ggml(DType::Q8_K, row.data(), bytes.data(), 256), Error);
  EXPECT_THROW(quantize_row_ggml(DType::Q4_K, row.data(), bytes.data(), 100), Error);
}

}  // namespace
}  // namespace lumen::tensor
