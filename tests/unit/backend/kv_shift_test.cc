// Context shift's key rotation: a key stored rotated at position p, shifted by delta, equals the
// key rotated at p + delta (to the cache's rounding), for every rope style and scaling; values
// and other blocks are untouched; bad blocks are refused.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "backend/cpu/hadamard.h"
#include "backend/cpu/kv_shift.h"
#include "backend/cpu/kv_store.h"
#include "backend/cpu/rope.h"
#include "paged_cache_fixture.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;

constexpr int64_t kHeadDim = 64, kHeads = 2, kRow = kHeadDim * kHeads, kBlock = 16;

// Keys of n positions, rotated at positions first..first+n, stored into blocks `table`.
void store_rotated(PagedCache& cache, const std::vector<float>& raw, const std::vector<int32_t>& table,
                   int64_t first, int64_t n, const RopeConfig& rope) {
  const RopeParams params = make_rope_params(rope, kHeadDim);
  std::vector<float> k = raw, v = raw;
  std::vector<float> cos_sin(static_cast<size_t>(params.rope_dims));
  for (int64_t t = 0; t < n; ++t) {
    rope_cache(params, static_cast<int32_t>(first + t), cos_sin.data());
    for (int64_t h = 0; h < kHeads; ++h) rope_head(params, cos_sin.data(), k.data() + t * kRow + h * kHeadDim);
  }
  const std::vector<SequenceSlice> seqs = {{0, n, 0, table}};
  store_kv(f32_matrix(k.data(), kRow, n), f32_matrix(v.data(), kRow, n), seqs, cache.layer());
}

struct Case {
  const char* name;
  RopeConfig rope;
};

class KvShift : public ::testing::TestWithParam<tensor::DType> {};

TEST_P(KvShift, AShiftedKeyEqualsTheKeyRotatedAtItsNewPosition) {
  std::vector<Case> cases(4);
  cases[0] = {"normal", {}};
  cases[1] = {"neox", {}};
  cases[1].rope.neox = true;
  cases[2] = {"linear", {}};
  cases[2].rope.scaling = RopeScalingType::Linear;
  cases[2].rope.scaling_factor = 4.0;
  cases[3] = {"yarn with an attention factor", {}};
  cases[3].rope.scaling = RopeScalingType::Yarn;
  cases[3].rope.scaling_factor = 4.0;
  cases[3].rope.original_context = 256;
  cases[3].rope.attn_factor = 0.9;
  for (Case& c : cases) {
    c.rope.rope_dims = kHeadDim;
    c.rope.freq_base = 10000.0;
    const int64_t n = 3 * kBlock, delta = 5 * kBlock;  // positions 80..127 move to 0..47
    const auto raw = testing::random_values(static_cast<size_t>(kRow * n), 7);
    PagedCache shifted(GetParam(), kRow, kBlock, 6), expected(GetParam(), kRow, kBlock, 6);
    const std::vector<int32_t> table = {4, 1, 3};
    store_rotated(shifted, raw, table, delta, n, c.rope);
    store_rotated(expected, raw, table, 0, n, c.rope);
    shift_keys(shifted.layer(), table, -static_cast<int32_t>(delta), c.rope, kHeadDim);
    // f16 keys round twice (stored, then rotated and stored again): a couple of f16 ulps.
    const double tolerance = GetParam() == tensor::DType::F16 ? 4e-3 : 2e-5;
    double worst = 0.0;
    for (int32_t block : table) {
      for (int64_t r = 0; r < kBlock; ++r) {
        const int64_t row = block * kBlock + r;
        for (int64_t d = 0; d < kRow; ++d) {
          const double want = expected.k_at(row, d);
          worst = std::max(worst, std::fabs(shifted.k_at(row, d) - want) / std::max(1.0, std::fabs(want)));
          ASSERT_EQ(shifted.v_at(row, d), expected.v_at(row, d)) << c.name << ": values must not move";
        }
      }
    }
    EXPECT_LT(worst, tolerance) << c.name;
  }
}

TEST_P(KvShift, TouchesOnlyTheGivenBlocksAndRefusesBadOnes) {
  PagedCache cache(GetParam(), kRow, kBlock, 4), untouched(GetParam(), kRow, kBlock, 4);
  RopeConfig rope;
  rope.rope_dims = kHeadDim;
  const std::vector<int32_t> blocks = {2};
  shift_keys(cache.layer(), blocks, -32, rope, kHeadDim);
  for (int64_t row = 0; row < 4 * kBlock; ++row) {
    if (row / kBlock == 2) continue;
    for (int64_t d = 0; d < kRow; d += 11) {
      ASSERT_EQ(std::bit_cast<uint32_t>(cache.k_at(row, d)), std::bit_cast<uint32_t>(untouched.k_at(row, d)));
    }
  }
  const std::vector<int32_t> bad = {4};
  EXPECT_THROW(shift_keys(cache.layer(), bad, -16, rope, kHeadDim), Error);
  const std::vector<int32_t> negative = {-1};
  EXPECT_THROW(shift_keys(cache.layer(), negative, -16, rope, kHeadDim), Error);
  EXPECT_THROW(shift_keys(cache.layer(), blocks, -16, rope, 48), Error);  // 48 does not divide 128
}

// A compressed K (--kv-cache-dtype) shifts as llama.cpp's K-shift does it: widened to f32,
// rotated, requantized. The result is the key rotated at its new position to within two
// quantizations (stored, then requantized), and V's bytes do not move. A shift that did not
// rotate, or rotated the wrong way, would miss by the keys' own size (about 1).
TEST(KvShiftCompressed, RequantizedKeysMatchTheKeysRotatedAtTheirNewPositions) {
  RopeConfig rope;
  rope.rope_dims = kHeadDim;
  const RopeParams params = make_rope_params(rope, kHeadDim);
  const int64_t n = 2 * kBlock, delta = 3 * kBlock;
  const auto raw = testing::random_values(static_cast<size_t>(kRow * n), 9);
  auto rotated_at = [&](int64_t first) {
    std::vector<float> k = raw, cos_sin(static_cast<size_t>(params.rope_dims));
    for (int64_t t = 0; t < n; ++t) {
      rope_cache(params, static_cast<int32_t>(first + t), cos_sin.data());
      for (int64_t h = 0; h < kHeads; ++h) rope_head(params, cos_sin.data(), k.data() + t * kRow + h * kHeadDim);
    }
    return k;
  };
  std::vector<float> moved = rotated_at(delta);
  const std::vector<float> want = rotated_at(0);
  // One quantization's worst error for values up to sqrt(2) (rotated pairs of values in
  // [-1, 1]): bf16 and fp8 half a unit of their last place relative to the value, q8_0 half a
  // step of amax / 127, q4_0 a whole step of amax / 8 (its clamped end). The shift rotates the
  // first error (a pair's errors combine: up to sqrt(2) of it) and adds a second: 2.5 of one.
  const double amax = std::sqrt(2.0);
  const std::pair<tensor::DType, double> types[] = {{tensor::DType::BF16, 2.5 * amax * 0x1p-9},
                                                    {tensor::DType::Q8_0, 2.5 * amax / 254},
                                                    {tensor::DType::Q4_0, 2.5 * amax / 8},
                                                    {tensor::DType::FP8_E4M3, 2.5 * amax * 0x1p-4}};
  for (const auto& [type, tolerance] : types) {
    SCOPED_TRACE(std::string(tensor::dtype_name(type)));
    const size_t row_bytes = kv_slice_bytes(type, kRow);
    std::vector<uint8_t> k_bytes(row_bytes * 4 * kBlock), v_bytes(row_bytes * 4 * kBlock, 0x5A);
    KvLayer layer{TensorView{type, {kRow, kBlock, 4, 1}, row_bytes, k_bytes.data()},
                  TensorView{type, {kRow, kBlock, 4, 1}, row_bytes, v_bytes.data()}, kBlock};
    const std::vector<int32_t> table = {3, 1};
    const std::vector<SequenceSlice> seqs = {{0, n, 0, table}};
    store_kv(f32_matrix(moved.data(), kRow, n), f32_matrix(moved.data(), kRow, n), seqs, layer);
    const std::vector<uint8_t> values_before = v_bytes;
    shift_keys(layer, table, -static_cast<int32_t>(delta), rope, kHeadDim);
    EXPECT_TRUE(v_bytes == values_before);
    double worst = 0.0;
    std::vector<float> row(static_cast<size_t>(kRow));
    for (int64_t t = 0; t < n; ++t) {
      const int64_t cache_row = table[static_cast<size_t>(t / kBlock)] * kBlock + t % kBlock;
      tensor::dequantize_row(type, k_bytes.data() + static_cast<size_t>(cache_row) * row_bytes, row.data(), kRow);
      for (int64_t d = 0; d < kRow; ++d) {
        worst = std::max(worst, static_cast<double>(std::fabs(row[static_cast<size_t>(d)] - want[static_cast<size_t>(t * kRow + d)])));
      }
    }
    EXPECT_LT(worst, tolerance);
  }
}

// A Hadamard-rotated cache (KvLayer::rotated, what a quantized cache stores by default): the
// stored key is H R(p) k, so the shift must undo H before rotating by delta and redo it after.
// q8_0's rounding is fine enough to tell: a shift that rotated in the Hadamard basis would miss
// by about the keys' own size, 20 times the tolerance.
TEST(KvShiftCompressed, RotatedCacheShiftsInTheRopeBasis) {
  RopeConfig rope;
  rope.rope_dims = kHeadDim;
  const RopeParams params = make_rope_params(rope, kHeadDim);
  const int64_t n = 2 * kBlock, delta = 3 * kBlock;
  const auto raw = testing::random_values(static_cast<size_t>(kRow * n), 11);
  auto stored_at = [&](int64_t first) {  // H R(first + t) k, head by head
    std::vector<float> k = raw, cos_sin(static_cast<size_t>(params.rope_dims));
    for (int64_t t = 0; t < n; ++t) {
      rope_cache(params, static_cast<int32_t>(first + t), cos_sin.data());
      for (int64_t h = 0; h < kHeads; ++h) {
        rope_head(params, cos_sin.data(), k.data() + t * kRow + h * kHeadDim);
        hadamard_rotate(k.data() + t * kRow + h * kHeadDim, kHeadDim);
      }
    }
    return k;
  };
  std::vector<float> moved = stored_at(delta);
  const std::vector<float> want = stored_at(0);
  double amax = 0.0;
  for (const std::vector<float>* values : {static_cast<const std::vector<float>*>(&moved), &want}) {
    for (const float x : *values) amax = std::max(amax, static_cast<double>(std::fabs(x)));
  }
  const tensor::DType type = tensor::DType::Q8_0;
  const size_t row_bytes = kv_slice_bytes(type, kRow);
  std::vector<uint8_t> k_bytes(row_bytes * 4 * kBlock), v_bytes(row_bytes * 4 * kBlock);
  KvLayer layer{TensorView{type, {kRow, kBlock, 4, 1}, row_bytes, k_bytes.data()},
                TensorView{type, {kRow, kBlock, 4, 1}, row_bytes, v_bytes.data()}, kBlock, true};
  const std::vector<int32_t> table = {2, 0};
  store_kv(f32_matrix(moved.data(), kRow, n), f32_matrix(moved.data(), kRow, n), {{{0, n, 0, table}}}, layer);
  shift_keys(layer, table, -static_cast<int32_t>(delta), rope, kHeadDim);
  double worst = 0.0;
  std::vector<float> row(static_cast<size_t>(kRow));
  for (int64_t t = 0; t < n; ++t) {
    const int64_t cache_row = table[static_cast<size_t>(t / kBlock)] * kBlock + t % kBlock;
    tensor::dequantize_row(type, k_bytes.data() + static_cast<size_t>(cache_row) * row_bytes, row.data(), kRow);
    for (int64_t d = 0; d < kRow; ++d) {
      worst = std::max(worst, static_cast<double>(std::fabs(row[static_cast<size_t>(d)] - want[static_cast<size_t>(t * kRow + d)])));
    }
  }
  // Two q8_0 roundings of at most half a step (amax / 127) per value. The first is carried
  // through H, the rope and H again, which keep a head's error norm: a value can gather at
  // most the whole norm, sqrt(64) half-steps.
  EXPECT_LT(worst, (8.0 + 1.0) * amax / 254);
  EXPECT_GT(amax, 0.5);
}

INSTANTIATE_TEST_SUITE_P(Types, KvShift, ::testing::Values(tensor::DType::F32, tensor::DType::F16),
                         [](const ::testing::TestParamInfo<tensor::DType>& p) { return std::string(tensor::dtype_name(p.param)); });

}  // namespace
}  // namespace lumen::backend::cpu
