// The attention tile kernels' f16 forms (which widen K/V rows in registers, read in place
// through one pointer per key) against their f32 forms run on the same rows widened beforehand:
// widening is exact, so the two must agree bit for bit, at every instruction-set level, for
// every query count (the kernels take queries in groups of up to four), key count (keys go in
// groups of four, a short last group repeating its last key) and head size (32-, 8- and 1-wide
// dimension loops). Weights include zeros, which the value loop must skip. The AVX2 and AVX-512
// builds of the SIMD loops must agree bit for bit, and a query's results must not depend on the
// queries it shares a call with. round_f16 is held to tensor::float_to_fp16 bit for bit,
// subnormal halves, ties, overflow, infinities and NaNs included.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_features.h"
#include "kernel_test_util.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::cpu {
namespace {

std::vector<std::pair<std::string, const AttentionTileKernels*>> tile_levels() {
  std::vector<std::pair<std::string, const AttentionTileKernels*>> levels = {{"portable", &portable_attention_tiles()}};
  if (avx2_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx2) {
    levels.emplace_back("avx2", avx2_attention_tiles());
  }
  if (avx512_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx512) {
    levels.emplace_back("avx512", avx512_attention_tiles());
  }
  return levels;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// nk f16 rows of `dim` values scattered in a pool (shuffled order, an offset into a wider row,
// as in the paged cache), plus the same rows widened into a dense f32 tile.
struct Rows {
  std::vector<uint16_t> pool;
  std::vector<const uint16_t*> pointers;
  std::vector<float> widened;

  // with_infinity: value 0 of key 0 is +inf, so that multiplying it by a zero weight instead of
  // skipping it shows (0 x inf is NaN).
  Rows(int64_t nk, int64_t dim, uint32_t seed, bool with_infinity = false) {
    const int64_t row_width = dim + 24, offset = 11;
    pool.resize(static_cast<size_t>((nk + 3) * row_width));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    for (size_t i = 0; i < pool.size(); ++i) {
      // Mostly ordinary values, some subnormal halves and signed zeros.
      const uint32_t kind = rng() % 16;
      pool[i] = kind == 0   ? static_cast<uint16_t>(rng() % 0x400)           // +subnormal
                : kind == 1 ? static_cast<uint16_t>(0x8000 | rng() % 0x400)  // -subnormal or -0
                            : tensor::float_to_fp16(value(rng));
    }
    std::vector<int64_t> order(static_cast<size_t>(nk + 3));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t j = 0; j < nk; ++j) {
      const uint16_t* row = pool.data() + order[static_cast<size_t>(j)] * row_width + offset;
      pointers.push_back(row);
      for (int64_t d = 0; d < dim; ++d) widened.push_back(tensor::fp16_to_float(row[d]));
    }
    if (with_infinity) {
      pool[static_cast<size_t>(pointers[0] - pool.data())] = 0x7c00;
      widened[0] = std::numeric_limits<float>::infinity();
    }
  }
};

// Accumulators with a -0 in dim 1 of every query: adding 0 x v instead of skipping a zero
// weight would turn it into +0.
std::vector<float> accumulators(int64_t nq, int64_t dim, uint32_t seed) {
  auto acc = testing::random_values(static_cast<size_t>(nq * dim), seed);
  for (int64_t i = 0; dim > 1 && i < nq; ++i) acc[static_cast<size_t>(i * dim + 1)] = -0.0f;
  return acc;
}

struct Case {
  int64_t nq, nk, dim;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const int64_t dim : {64, 80, 128, 36, 8, 5}) {
    for (const int64_t nq : {1, 2, 3, 4, 5, 7}) {
      for (const int64_t nk : {1, 2, 3, 4, 5, 7, 9, 64}) all.push_back({nq, nk, dim});
    }
  }
  return all;
}

TEST(AttentionTiles, QkOnF16RowsEqualsQkOnWidenedRows) {
  for (const auto& [level, tiles] : tile_levels()) {
    for (const Case& c : cases()) {
      const Rows k(c.nk, c.dim, static_cast<uint32_t>(c.nq * 1000 + c.nk * 10 + c.dim));
      const auto q = testing::random_values(static_cast<size_t>(c.nq * c.dim), 7, -3.0f, 3.0f);
      const int64_t ld = c.nk + 3;
      std::vector<float> want(static_cast<size_t>(c.nq * ld), -1.0f), got = want;
      tiles->qk(q.data(), c.nq, k.widened.data(), c.dim, c.nk, c.dim, want.data(), ld);
      tiles->qk_f16(q.data(), c.nq, k.pointers.data(), c.nk, c.dim, got.data(), ld);
      EXPECT_TRUE(same_bits(got, want)) << level << " nq " << c.nq << " nk " << c.nk << " dim " << c.dim;
    }
  }
}

TEST(AttentionTiles, PvOnF16RowsEqualsPvOnWidenedRows) {
  for (const auto& [level, tiles] : tile_levels()) {
    for (const Case& c : cases()) {
      const Rows v(c.nk, c.dim, static_cast<uint32_t>(c.nq * 77 + c.nk * 5 + c.dim), true);
      const int64_t ld = c.nk + 2;
      auto p = testing::random_values(static_cast<size_t>(c.nq * ld), 3, 0.0f, 1.0f);
      // Zero weights: every third, and a whole query's row when there are several queries, so
      // that groups of queries see all-live, mixed and all-zero keys.
      for (size_t j = 0; j < p.size(); j += 3) p[j] = 0.0f;
      if (c.nq > 1) std::fill_n(p.begin() + ld, ld, 0.0f);
      const auto acc = accumulators(c.nq, c.dim, 5);
      std::vector<float> want = acc, got = acc;
      tiles->pv(p.data(), c.nq, ld, v.widened.data(), c.dim, c.nk, c.dim, want.data());
      tiles->pv_f16(p.data(), c.nq, ld, v.pointers.data(), c.nk, c.dim, got.data());
      EXPECT_TRUE(same_bits(got, want)) << level << " nq " << c.nq << " nk " << c.nk << " dim " << c.dim;
    }
  }
}

// A query's scores and accumulator must not depend on which other queries share the call (the
// kernels group queries by up to four): run each query alone and compare.
TEST(AttentionTiles, EachQueryIsComputedAsIfAlone) {
  for (const auto& [level, tiles] : tile_levels()) {
    const int64_t nq = 7, nk = 13, dim = 64;
    const Rows rows(nk, dim, 42);
    const auto q = testing::random_values(static_cast<size_t>(nq * dim), 9, -3.0f, 3.0f);
    auto p = testing::random_values(static_cast<size_t>(nq * nk), 11, 0.0f, 1.0f);
    for (size_t j = 1; j < p.size(); j += 4) p[j] = 0.0f;
    std::vector<float> scores(static_cast<size_t>(nq * nk)), acc(static_cast<size_t>(nq * dim), 0.0f);
    tiles->qk_f16(q.data(), nq, rows.pointers.data(), nk, dim, scores.data(), nk);
    tiles->pv_f16(p.data(), nq, nk, rows.pointers.data(), nk, dim, acc.data());
    for (int64_t i = 0; i < nq; ++i) {
      std::vector<float> one_score(static_cast<size_t>(nk)), one_acc(static_cast<size_t>(dim), 0.0f);
      tiles->qk_f16(q.data() + i * dim, 1, rows.pointers.data(), nk, dim, one_score.data(), nk);
      tiles->pv_f16(p.data() + i * nk, 1, nk, rows.pointers.data(), nk, dim, one_acc.data());
      EXPECT_TRUE(same_bits(one_score, std::vector<float>(scores.begin() + i * nk, scores.begin() + (i + 1) * nk)))
          << level << " query " << i;
      EXPECT_TRUE(same_bits(one_acc, std::vector<float>(acc.begin() + i * dim, acc.begin() + (i + 1) * dim)))
          << level << " query " << i;
    }
  }
}

// The AVX-512 build of the 256-bit loops only allocates registers differently and skips zero
// weights with masks instead of branches: it must give the AVX2 build's results bit for bit.
TEST(AttentionTiles, Avx512BuildEqualsAvx2Build) {
  const AttentionTileKernels* avx2 = avx2_attention_tiles();
  const AttentionTileKernels* avx512 = avx512_attention_tiles();
  if (avx2 == nullptr || avx512 == nullptr || detected_isa() < Isa::kAvx512) {
    GTEST_SKIP() << "needs a CPU and build with AVX-512";
  }
  for (const Case& c : cases()) {
    const Rows rows(c.nk, c.dim, static_cast<uint32_t>(c.nq * 31 + c.nk * 7 + c.dim));
    const Rows values(c.nk, c.dim, static_cast<uint32_t>(c.nq * 37 + c.nk * 3 + c.dim), true);
    const auto q = testing::random_values(static_cast<size_t>(c.nq * c.dim), 13, -3.0f, 3.0f);
    auto p = testing::random_values(static_cast<size_t>(c.nq * c.nk), 17, 0.0f, 1.0f);
    for (size_t j = 0; j < p.size(); j += 3) p[j] = 0.0f;
    if (c.nq > 1) std::fill_n(p.begin() + c.nk, c.nk, 0.0f);  // query 1: no live key at all
    const auto acc = accumulators(c.nq, c.dim, 19);
    const std::string where = "nq " + std::to_string(c.nq) + " nk " + std::to_string(c.nk) +
                              " dim " + std::to_string(c.dim);
    std::vector<float> s2(static_cast<size_t>(c.nq * c.nk)), s5 = s2;
    avx2->qk_f16(q.data(), c.nq, rows.pointers.data(), c.nk, c.dim, s2.data(), c.nk);
    avx512->qk_f16(q.data(), c.nq, rows.pointers.data(), c.nk, c.dim, s5.data(), c.nk);
    EXPECT_TRUE(same_bits(s2, s5)) << "qk_f16 " << where;
    avx2->qk(q.data(), c.nq, rows.widened.data(), c.dim, c.nk, c.dim, s2.data(), c.nk);
    avx512->qk(q.data(), c.nq, rows.widened.data(), c.dim, c.nk, c.dim, s5.data(), c.nk);
    EXPECT_TRUE(same_bits(s2, s5)) << "qk " << where;
    std::vector<float> a2 = acc, a5 = acc;
    avx2->pv_f16(p.data(), c.nq, c.nk, values.pointers.data(), c.nk, c.dim, a2.data());
    avx512->pv_f16(p.data(), c.nq, c.nk, values.pointers.data(), c.nk, c.dim, a5.data());
    EXPECT_TRUE(same_bits(a2, a5)) << "pv_f16 " << where;
    a2 = acc;
    a5 = acc;
    avx2->pv(p.data(), c.nq, c.nk, values.widened.data(), c.dim, c.nk, c.dim, a2.data());
    avx512->pv(p.data(), c.nq, c.nk, values.widened.data(), c.dim, c.nk, c.dim, a5.data());
    EXPECT_TRUE(same_bits(a2, a5)) << "pv " << where;
    std::vector<float> e2(p.begin(), p.end()), e5 = e2;
    for (float& x : e2) x = -4.0f * x;
    e5 = e2;
    const float sum2 = avx2->exp_shifted(e2.data(), static_cast<int64_t>(e2.size()), 0.5f);
    const float sum5 = avx512->exp_shifted(e5.data(), static_cast<int64_t>(e5.size()), 0.5f);
    EXPECT_TRUE(same_bits(e2, e5) && std::bit_cast<uint32_t>(sum2) == std::bit_cast<uint32_t>(sum5))
        << "exp_shifted " << where;
    // With the sum in double (the exact f16 path), masked keys (-inf) included.
    std::vector<float> d2(p.begin(), p.end());
    for (size_t j = 0; j < d2.size(); ++j) d2[j] = j % 5 == 1 ? -std::numeric_limits<float>::infinity() : -4.0f * d2[j];
    std::vector<float> d5 = d2;
    const double dsum2 = avx2->exp_shifted_f64(d2.data(), static_cast<int64_t>(d2.size()), 0.5f);
    const double dsum5 = avx512->exp_shifted_f64(d5.data(), static_cast<int64_t>(d5.size()), 0.5f);
    EXPECT_TRUE(same_bits(d2, d5) && std::bit_cast<uint64_t>(dsum2) == std::bit_cast<uint64_t>(dsum5))
        << "exp_shifted_f64 " << where;
  }
}

// The exact path's exp with a double sum: libm's expf (correctly rounded but for rare
// near-halfway cases) on nearly every value and never more than 1 ulp from it, exactly 0 for a
// masked key, and a sum within rounding of the portable one's.
TEST(AttentionTiles, ExpShiftedF64IsExpWithADoubleSum) {
  const AttentionTileKernels& portable = portable_attention_tiles();
  const AttentionTileKernels* simd = avx2_attention_tiles();
  if (simd == nullptr || detected_isa() < Isa::kAvx2) GTEST_SKIP() << "no AVX2 on this machine or in this build";
  int64_t values = 0, differing = 0;
  for (const int64_t n : {1, 7, 8, 9, 100, 1000, 100000}) {
    auto x = testing::random_values(static_cast<size_t>(n), static_cast<uint32_t>(n), -110.0f, 0.0f);
    if (n > 3) x[2] = -std::numeric_limits<float>::infinity();
    std::vector<float> want = x, got = x;
    const double want_sum = portable.exp_shifted_f64(want.data(), n, 0.25f);
    const double got_sum = simd->exp_shifted_f64(got.data(), n, 0.25f);
    for (int64_t j = 0; j < n; ++j) {
      const auto w = static_cast<size_t>(j);
      if (std::isinf(x[w])) {
        EXPECT_EQ(got[w], 0.0f);
        continue;
      }
      EXPECT_LE(std::fabs(got[w] - want[w]), std::fabs(std::nextafter(want[w], 1.0f) - want[w]))
          << "n " << n << " j " << j << ": " << got[w] << " vs " << want[w];
      ++values;
      differing += got[w] != want[w];
    }
    EXPECT_NEAR(got_sum, want_sum, 1e-12 * want_sum) << "n " << n;
  }
  std::printf("exp_shifted_f64: %lld of %lld values differ from std::exp by 1 ulp\n", static_cast<long long>(differing),
              static_cast<long long>(values));
  EXPECT_LE(differing, values / 1000) << differing << " of " << values << " differ from std::exp";
}

// A compressed KV cache's rows (q8_0, q4_0) widen to exactly tensor::dequantize_row's values
// at every level: random codes, and scales from tiny to large (subnormal halves included).
TEST(AttentionTiles, DequantizeEqualsTheReference) {
  std::mt19937 rng(3);
  for (const auto& [type, block_bytes] : {std::pair{tensor::DType::Q8_0, 34}, std::pair{tensor::DType::Q4_0, 18}}) {
    constexpr int64_t kBlocks = 40;
    std::vector<uint8_t> bytes(static_cast<size_t>(kBlocks * block_bytes));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < kBlocks; ++b) {  // finite scales: a NaN scale would compare unequal to itself
      const uint16_t scale = tensor::float_to_fp16(std::ldexp(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng),
                                                              static_cast<int>(rng() % 30) - 20));
      std::memcpy(bytes.data() + b * block_bytes, &scale, 2);
    }
    std::vector<float> want(static_cast<size_t>(kBlocks * 32));
    tensor::dequantize_row(type, bytes.data(), want.data(), kBlocks * 32);
    for (const auto& [level, tiles] : tile_levels()) {
      std::vector<float> got(want.size());
      (type == tensor::DType::Q8_0 ? tiles->dequantize_q8_0 : tiles->dequantize_q4_0)(bytes.data(), got.data(), kBlocks);
      EXPECT_TRUE(same_bits(got, want)) << level << " " << tensor::dtype_name(type);
    }
  }
}

TEST(AttentionTiles, RoundF16MatchesScalarNarrowing) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::bit_cast<float>(0xffc12345u),  // negative quiet NaN with payload
                               std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(1.5f, -25),
                               std::ldexp(3.0f, -25), std::ldexp(1.0f, -14), std::ldexp(1.0f, -130),
                               1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11)};
  std::mt19937 rng(1);
  for (int i = 0; i < 5000; ++i) {
    // Random magnitudes across the whole half range and below it (subnormal halves), and random
    // bit patterns near rounding boundaries.
    values.push_back(std::ldexp(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng),
                                static_cast<int>(rng() % 44) - 28));
    const auto bits = [&rng] { return static_cast<uint32_t>(rng()); };
    const uint32_t exponent = 103 + bits() % 40;  // 2^-24 .. 2^15, subnormal halves included
    const uint32_t low = bits() % 2 == 0 ? 0x1000u : bits() & 0x1fffu;  // a tie, or anything
    values.push_back(std::bit_cast<float>((bits() & 0x80000000u) | exponent << 23 | (bits() & 0x7fe000u) | low));
  }
  for (const auto& [level, tiles] : tile_levels()) {
    for (const float scale : {1.0f, 0.37f, 3.0f}) {
      std::vector<float> got(values.size());
      tiles->round_f16(values.data(), static_cast<int64_t>(values.size()), scale, got.data());
      for (size_t i = 0; i < values.size(); ++i) {
        const float want = tensor::fp16_to_float(tensor::float_to_fp16(values[i] * scale));
        EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want))
            << level << " value " << values[i] << " scale " << scale;
      }
      // In place, as attention rounds its probability rows.
      std::vector<float> in_place = values;
      tiles->round_f16(in_place.data(), static_cast<int64_t>(in_place.size()), scale, in_place.data());
      EXPECT_TRUE(same_bits(in_place, got)) << level;
    }
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
