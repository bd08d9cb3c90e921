// The CPU matmul against a plain reference, for every weight type and every instruction-set
// level this CPU has: odd sizes (rows not a multiple of the tile, a few blocks of columns,
// strides wider than the data), 1..64 tokens, 1 and 3 threads.
//
// Reference: each weight row dequantized with tensor::dequantize_row, each activation row
// quantized with quantize_activation_row and dequantized with tensor::dequantize_row into the type ggml pairs
// with the weight (f32 for float weights), products accumulated in double. The kernels compute
// the same products with integer dot products and f32 scaling, so the difference is f32 rounding:
// the tolerance is 2e-5 of sum |w| |x| per output, plus, for Q4_1 / Q5_1, the f16 rounding of the
// Q8_1 block's s = d * sum(q) (two half-ulps of m * s per block). One wrong code in one block is
// already several times that bound, so a wrong kernel cannot pass.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_packed.h"
#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using tensor::DType;

DType activation_type(DType weight) {
  switch (weight) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::MXFP4: return DType::Q8_0;
    case DType::Q4_1: case DType::Q5_1: return DType::Q8_1;
    case DType::F32: case DType::F16: case DType::BF16: return DType::F32;
    default: return DType::Q8_K;
  }
}

bool has_min(DType weight) { return weight == DType::Q4_1 || weight == DType::Q5_1; }

struct Problem {
  DType type;
  int64_t rows, cols, n_tokens, x_stride, y_stride;
  std::vector<uint8_t> weights;
  std::vector<float> x;
  WeightMatrix matrix() const {
    return WeightMatrix{type, rows, cols, weights.data(), weights.size() / static_cast<size_t>(rows)};
  }
};

Problem make_problem(DType type, int64_t rows, int64_t cols, int64_t n_tokens, uint32_t seed) {
  Problem p{type, rows, cols, n_tokens, cols + 5, rows + 3, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  p.weights.resize(row_bytes * static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    // Rows of different magnitude and an offset, so mins and scales vary between blocks.
    const float scale = 0.05f + static_cast<float>(r % 7) * 0.3f;
    const float shift = (r % 3 == 0) ? 0.4f * scale : 0.0f;
    for (auto& v : row) v = uniform(rng) * scale + shift;
    tensor::quantize_row(type, row.data(), p.weights.data() + row_bytes * static_cast<size_t>(r), cols);
  }
  p.x.resize(static_cast<size_t>(p.x_stride * n_tokens));
  for (auto& v : p.x) v = uniform(rng) * 2.0f;
  return p;
}

struct Reference {
  std::vector<double> y;    // [token][row]
  std::vector<double> tol;  // per output
};

Reference reference(const Problem& p) {
  const DType act = activation_type(p.type);
  const size_t row_bytes = p.weights.size() / static_cast<size_t>(p.rows);
  std::vector<float> w(static_cast<size_t>(p.rows * p.cols));
  for (int64_t r = 0; r < p.rows; ++r) {
    tensor::dequantize_row(p.type, p.weights.data() + row_bytes * static_cast<size_t>(r),
                           w.data() + r * p.cols, p.cols);
  }
  Reference ref;
  ref.y.resize(static_cast<size_t>(p.rows * p.n_tokens));
  ref.tol.resize(ref.y.size());
  std::vector<float> xd(static_cast<size_t>(p.cols));
  std::vector<uint8_t> xq(act == DType::F32 ? 0 : *tensor::row_bytes(act, p.cols));
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    const float* x = p.x.data() + t * p.x_stride;
    if (act == DType::F32) {
      std::memcpy(xd.data(), x, xd.size() * sizeof(float));
    } else {
      quantize_activation_row(act, x, xq.data(), p.cols);
      tensor::dequantize_row(act, xq.data(), xd.data(), p.cols);
    }
    for (int64_t r = 0; r < p.rows; ++r) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t c = 0; c < p.cols; ++c) {
        const double product = static_cast<double>(w[r * p.cols + c]) * xd[c];
        sum += product;
        magnitude += std::fabs(product);
      }
      double tol = 2e-5 * magnitude + 1e-6;
      if (has_min(p.type)) {
        const size_t wblock = p.type == DType::Q4_1 ? sizeof(tensor::BlockQ4_1) : sizeof(tensor::BlockQ5_1);
        for (int64_t b = 0; b < p.cols / 32; ++b) {
          uint16_t m, s;
          std::memcpy(&m, p.weights.data() + row_bytes * r + wblock * b + 2, 2);
          std::memcpy(&s, xq.data() + sizeof(tensor::BlockQ8_1) * b + 2, 2);
          tol += std::fabs(tensor::fp16_to_float(m) * tensor::fp16_to_float(s)) * 0x1p-10;
        }
      }
      ref.y[t * p.rows + r] = sum;
      ref.tol[t * p.rows + r] = tol;
    }
  }
  return ref;
}

// With `pack`, the weights also go in packed form (matmul_packed.h); levels without packed
// kernels must then ignore the packed copy.
std::vector<float> run(const Problem& p, Isa isa, unsigned threads, bool pack = false) {
  ThreadPool pool(threads);
  MatmulScratch scratch;
  std::vector<float> y(static_cast<size_t>(p.y_stride * p.n_tokens), -12345.0f);
  WeightMatrix w = p.matrix();
  std::unique_ptr<PackedWeights> packed;
  if (pack) {
    packed = std::make_unique<PackedWeights>(w, pool);
    w.packed = packed.get();
  }
  matmul(w, p.x.data(), p.x_stride, p.n_tokens, y.data(), p.y_stride, pool, scratch, isa);
  return y;
}

// Checks y (y_stride apart per token) against the reference; padding rows must be untouched.
void expect_matches_reference(const Problem& p, const Reference& ref, const std::vector<float>& y,
                              const std::string& what) {
  int failures = 0;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t r = 0; r < p.y_stride; ++r) {
      const float got = y[t * p.y_stride + r];
      if (r >= p.rows) {
        ASSERT_EQ(got, -12345.0f) << what;
        continue;
      }
      const double want = ref.y[t * p.rows + r];
      if (std::fabs(got - want) > ref.tol[t * p.rows + r] && ++failures <= 3) {
        ADD_FAILURE() << what << " row " << r << " token " << t << ": got " << got << " want "
                      << want << " tol " << ref.tol[t * p.rows + r];
      }
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

std::vector<Isa> available_isas() {
  std::vector<Isa> levels;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa <= detected_isa()) levels.push_back(isa);
  }
  return levels;
}

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesReferenceOnEveryLevel) {
  const DType type = GetParam();
  const int64_t block = tensor::dtype_info(type).block_elements;
  const int64_t cols = block == 1 ? 75 : (block == 32 ? 5 * 32 : 3 * 256);
  const int64_t rows = 37;  // not a multiple of the 4-row tile
  for (const int64_t n_tokens : {1, 3, 17, 64}) {
    const Problem p = make_problem(type, rows, cols, n_tokens, static_cast<uint32_t>(n_tokens * 31 + 7));
    const Reference ref = reference(p);
    for (const Isa isa : available_isas()) {
      for (const unsigned threads : {1u, 3u}) {
        const std::vector<float> y = run(p, isa, threads);
        int failures = 0;
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < p.y_stride; ++r) {
            const float got = y[t * p.y_stride + r];
            if (r >= rows) {  // padding between output rows stays untouched
              ASSERT_EQ(got, -12345.0f);
              continue;
            }
            const double want = ref.y[t * rows + r];
            if (std::fabs(got - want) > ref.tol[t * rows + r] && ++failures <= 3) {
              ADD_FAILURE() << tensor::dtype_name(type) << " " << isa_name(isa) << " threads "
                            << threads << " tokens " << n_tokens << " row " << r << " token " << t
                            << ": got " << got << " want " << want << " tol " << ref.tol[t * rows + r];
            }
          }
        }
        EXPECT_EQ(failures, 0);
      }
    }
  }
}

// The SIMD levels compute the same integer dot products as the scalar path; only the order of
// f32 additions differs, so they agree to ~1e-5 of the output's magnitude.
TEST_P(MatmulTest, SimdLevelsAgreeWithScalar) {
  const DType type = GetParam();
  const int64_t block = tensor::dtype_info(type).block_elements;
  const int64_t cols = block == 1 ? 4 * 256 + 3 : 4 * 256;
  const Problem p = make_problem(type, 21, cols, 9, 99);
  const std::vector<float> scalar = run(p, Isa::kScalar, 1);
  const Reference ref = reference(p);
  for (const Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    const std::vector<float> simd = run(p, isa, 2);
    for (int64_t t = 0; t < p.n_tokens; ++t) {
      for (int64_t r = 0; r < p.rows; ++r) {
        const size_t i = static_cast<size_t>(t * p.y_stride + r);
        const double bound = 1e-5 * (std::fabs(scalar[i]) + ref.tol[t * p.rows + r] / 2e-5);
        ASSERT_NEAR(simd[i], scalar[i], bound) << tensor::dtype_name(type) << " " << isa_name(isa)
                                               << " row " << r << " token " << t;
      }
    }
  }
}

// Packed weights (Q4_0, Q4_1, Q5_0, Q8_0): rows around and below the 16-row group (the last group is
// partly padding), 1..64 tokens (tiles of up to 8 and their remainders, decode and prefill
// splits), on every level: AVX-512 runs the packed kernels, the others must fall back to the
// file layout.
class PackedMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(PackedMatmulTest, MatchesReferenceOnEveryLevel) {
  const DType type = GetParam();
  const PackedFormat format = packed_format(type);
  ASSERT_GT(format.qs_bytes, 0u);
  int seed = 0;
  for (const int64_t rows : {1, 15, 16, 37, 83}) {
    for (const int64_t blocks : {1, 5, 12}) {
      const int64_t cols = blocks * format.block;
      for (const int64_t n_tokens : {1, 2, 7, 8, 9, 17, 64, 70}) {
        if (rows * blocks * n_tokens > 83 * 5 * 70) continue;  // keep the suite fast
        const Problem p = make_problem(type, rows, cols, n_tokens, static_cast<uint32_t>(++seed));
        const Reference ref = reference(p);
        for (const Isa isa : available_isas()) {
          for (const unsigned threads : {1u, 3u}) {
            const std::string what = std::string(tensor::dtype_name(type)) + " packed " +
                                     std::string(isa_name(isa)) + " rows " + std::to_string(rows) +
                                     " cols " + std::to_string(cols) + " tokens " +
                                     std::to_string(n_tokens) + " threads " + std::to_string(threads);
            expect_matches_reference(p, ref, run(p, isa, threads, true), what);
          }
        }
      }
    }
  }
}

// The packed kernels compute the scalar path's exact integer block sums and scale them the same
// way (only FMA contraction, the order of Q4_1's min term and the K-quants' float sums over
// sub-blocks differ). Where they do not run (no AVX-512 VNNI), asking for packed weights must
// give the unpacked kernels' results bit for bit.
TEST_P(PackedMatmulTest, AgreesWithScalarAndUnpacked) {
  const DType type = GetParam();
  for (const int64_t n_tokens : {1, 2, 3, 13}) {
    const Problem p = make_problem(type, 53, 2048, n_tokens, static_cast<uint32_t>(1234 + n_tokens));
    const std::vector<float> scalar = run(p, Isa::kScalar, 1);
    const std::vector<float> unpacked = run(p, detected_isa(), 2);
    const std::vector<float> packed = run(p, detected_isa(), 2, true);
    for (int64_t t = 0; t < p.n_tokens; ++t) {
      for (int64_t r = 0; r < p.rows; ++r) {
        const size_t i = static_cast<size_t>(t * p.y_stride + r);
        ASSERT_NEAR(packed[i], scalar[i], 1e-5 * std::fabs(scalar[i]) + 1e-4)
            << tensor::dtype_name(type) << " row " << r << " token " << t;
        if (matmul_rounds_like_ggml_simd(type)) {
          ASSERT_EQ(packed[i], unpacked[i]) << tensor::dtype_name(type) << " row " << r << " token " << t;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PackedTypes, PackedMatmulTest,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q5_K,
                                           DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4),
                         [](const ::testing::TestParamInfo<DType>& param) {
                           return std::string(tensor::dtype_name(param.param));
                         });

// Matrices of 4 MB and more are packed on the pool, smaller ones on the calling thread.
TEST(PackedWeights, LargeMatrixPackedOnThePoolMatchesScalar) {
  const Problem p = make_problem(DType::Q4_0, 4104, 2048, 2, 77);  // 4.7 MB, rows not 16k
  ASSERT_GE(p.weights.size(), size_t{4} << 20);
  const std::vector<float> scalar = run(p, Isa::kScalar, 1);
  const std::vector<float> packed = run(p, detected_isa(), 3, true);
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t r = 0; r < p.rows; ++r) {
      const size_t i = static_cast<size_t>(t * p.y_stride + r);
      ASSERT_NEAR(packed[i], scalar[i], 1e-5 * std::fabs(scalar[i]) + 1e-3) << "row " << r << " token " << t;
    }
  }
}

// MXFP4's packed scales are formed from the exponent bytes 16 lanes at a time: every one of the
// 256 exponents (the subnormal 2^-128 and 2^-127, and 2^127) must give the file layout's bits.
// Row r has one nonzero weight (level 1, at element r % 64) under exponent r, so its output is
// the scale times one activation, computed by both kernels with the same operations.
TEST(PackedWeights, Mxfp4ScalesMatchTheFileLayoutForEveryExponent) {
  if (!packing_pays_off(DType::MXFP4)) GTEST_SKIP() << "no packed MXFP4 kernels on this CPU";
  const int64_t rows = 256, cols = 64;
  constexpr size_t kRowBytes = 2 * sizeof(tensor::BlockMXFP4);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * kRowBytes, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t element = r % cols, b = element / 32, j = element % 32;
    for (int64_t other = 0; other < 2; ++other) bytes[kRowBytes * r + sizeof(tensor::BlockMXFP4) * other] = 127;
    uint8_t* block = bytes.data() + kRowBytes * r + sizeof(tensor::BlockMXFP4) * b;
    block[0] = static_cast<uint8_t>(r);                           // e
    block[1 + j % 16] = static_cast<uint8_t>(j < 16 ? 1 : 0x10);  // level 1 (nibble 1)
  }
  Problem p{DType::MXFP4, rows, cols, 1, cols, rows, bytes, std::vector<float>(cols, 1.0f)};
  const std::vector<float> unpacked = run(p, detected_isa(), 1);
  const std::vector<float> packed = run(p, detected_isa(), 1, true);
  for (int64_t r = 0; r < rows; ++r) {
    const auto i = static_cast<size_t>(r);
    ASSERT_EQ(std::bit_cast<uint32_t>(packed[i]), std::bit_cast<uint32_t>(unpacked[i])) << "exponent " << r;
    // The value itself: 2^(e - 128) times the activation (code 127 times its f16 d).
    const double want = std::ldexp(1.0, static_cast<int>(r) - 128) * 127.0 *
                        tensor::fp16_to_float(tensor::float_to_fp16(1.0f / 127.0f));
    ASSERT_NEAR(packed[i], want, std::fabs(want) * 1e-6 + 0x1p-148) << "exponent " << r;
  }
}

TEST(PackedWeights, LayoutInterleavesSixteenRows) {
  // Row r, block b of a Q4_0 matrix: d = r + 16 b (as raw f16 bits), qs[j] = 16 r + j.
  const int64_t rows = 20, cols = 64;
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * 36);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < 2; ++b) {
      tensor::BlockQ4_0 block;
      block.d = static_cast<uint16_t>(r + 16 * b);
      for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(16 * r + j);
      std::memcpy(bytes.data() + 36 * r + 18 * b, &block, sizeof(block));
    }
  }
  ThreadPool pool(2);
  const PackedWeights packed(WeightMatrix{DType::Q4_0, rows, cols, bytes.data(), 36}, pool);
  ASSERT_EQ(packed.groups(), 2);
  ASSERT_EQ(packed.group_bytes(), 2u * (256 + 32));
  for (int64_t g = 0; g < 2; ++g) {
    const uint8_t* group = packed.group(g);
    for (int r = 0; r < kPackRows; ++r) {
      const int64_t row = 16 * g + r;
      for (int b = 0; b < 2; ++b) {
        uint16_t d;
        std::memcpy(&d, group + 2 * 256 + 32 * b + 2 * r, 2);
        EXPECT_EQ(d, row < rows ? row + 16 * b : 0) << "row " << row << " block " << b;
        for (int j = 0; j < 16; ++j) {
          const uint8_t code = group[256 * b + 64 * (j / 4) + 4 * r + j % 4];
          EXPECT_EQ(code, row < rows ? static_cast<uint8_t>(16 * row + j) : 0);
        }
      }
    }
  }
}

TEST(PackedWeights, MismatchAndUnsupportedTypesAreErrors) {
  const Problem p = make_problem(DType::Q4_0, 32, 64, 1, 3);
  ThreadPool pool(1);
  MatmulScratch scratch;
  const PackedWeights packed(p.matrix(), pool);
  WeightMatrix w = p.matrix();
  w.rows = 16;  // a different matrix than the packed one
  w.packed = &packed;
  std::vector<float> y(64);
  EXPECT_THROW(matmul(w, p.x.data(), p.x_stride, 1, y.data(), 32, pool, scratch), Error);
  const Problem k = make_problem(DType::Q3_K, 16, 256, 1, 3);
  EXPECT_THROW(PackedWeights(k.matrix(), pool), Error);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                           DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                           DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4),
                         [](const ::testing::TestParamInfo<DType>& param) {
                           return std::string(tensor::dtype_name(param.param));
                         });

TEST(MatmulArguments, BadInputIsAnError) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<uint8_t> data(4096);
  std::vector<float> x(256), y(64);
  const WeightMatrix good{DType::Q4_0, 2, 64, data.data(), 36};
  EXPECT_NO_THROW(matmul(good, x.data(), 64, 1, y.data(), 2, pool, scratch));
  WeightMatrix bad = good;
  bad.row_bytes = 35;
  EXPECT_THROW(matmul(bad, x.data(), 64, 1, y.data(), 2, pool, scratch), Error);
  bad = good;
  bad.cols = 48;  // not whole blocks
  EXPECT_THROW(matmul(bad, x.data(), 64, 1, y.data(), 2, pool, scratch), Error);
  bad = good;
  bad.type = DType::IQ2_XXS;
  EXPECT_THROW(matmul(bad, x.data(), 64, 1, y.data(), 2, pool, scratch), Error);
  bad.type = DType::Q8_K;  // an activation format, never a weight
  EXPECT_THROW(matmul(bad, x.data(), 64, 1, y.data(), 2, pool, scratch), Error);
  EXPECT_THROW(matmul(good, x.data(), 32, 1, y.data(), 2, pool, scratch), Error);  // x stride
  EXPECT_THROW(matmul(good, x.data(), 64, 1, y.data(), 1, pool, scratch), Error);  // y stride
  EXPECT_THROW(matmul(good, x.data(), 64, -1, y.data(), 2, pool, scratch), Error);
  EXPECT_NO_THROW(matmul(good, x.data(), 64, 0, y.data(), 2, pool, scratch));
}

TEST(MatmulScratch, GrowsOnceThenIsReused) {
  const Problem p = make_problem(DType::Q4_0, 8, 64, 16, 5);
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::vector<float> y(static_cast<size_t>(p.y_stride * p.n_tokens));
  matmul(p.matrix(), p.x.data(), p.x_stride, p.n_tokens, y.data(), p.y_stride, pool, scratch);
  const uint8_t* first = scratch.quantized_x.data();
  const size_t size = scratch.quantized_x.size();
  EXPECT_GE(size, 16u * 2 * sizeof(tensor::BlockQ8_0));
  matmul(p.matrix(), p.x.data(), p.x_stride, 3, y.data(), p.y_stride, pool, scratch);
  EXPECT_EQ(scratch.quantized_x.data(), first);
  EXPECT_EQ(scratch.quantized_x.size(), size);
}

}  // namespace
}  // namespace lumen::backend::cpu
