// The fused matmul entry points against the plain ones they replace, bit for bit:
//  - matmul_same_input (a layer's Q, K, V or gate, up in one job, x quantized once per form)
//    must give exactly what separate matmul calls give, whatever the mix of weight types,
//    packed or not, on every instruction-set level, with 1 and 3 threads;
//  - matmul_glu must give exactly matmul(gate), matmul(up), then swiglu_row / geglu_row over
//    each whole row, including rows that are not a multiple of the 16-row chunks (the
//    activation's SIMD tail must fall on the same elements).
// Output rows past each product's width (the stride's padding) must stay untouched.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/activation.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_packed.h"
#include "kernel_test_util.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using tensor::DType;
constexpr float kUntouched = -12345.0f;

struct Weight {
  DType type;
  int64_t rows, cols;
  bool pack;
};

// A quantized random matrix, packed too when asked (and the type has packed kernels).
class TestMatrix {
 public:
  TestMatrix(const Weight& spec, uint32_t seed, ThreadPool& pool) : rows_(spec.rows) {
    const size_t row_bytes = *tensor::row_bytes(spec.type, spec.cols);
    data_.resize(row_bytes * static_cast<size_t>(spec.rows));
    const std::vector<float> values =
        testing::random_values(static_cast<size_t>(spec.rows * spec.cols), seed, -0.8f, 0.8f);
    for (int64_t r = 0; r < spec.rows; ++r) {
      tensor::quantize_row(spec.type, values.data() + r * spec.cols,
                           data_.data() + row_bytes * static_cast<size_t>(r), spec.cols);
    }
    matrix_ = WeightMatrix{spec.type, spec.rows, spec.cols, data_.data(), row_bytes};
    if (spec.pack && packed_format(spec.type).qs_bytes > 0) {
      packed_ = std::make_unique<PackedWeights>(matrix_, pool);
      matrix_.packed = packed_.get();
    }
  }
  const WeightMatrix& matrix() const { return matrix_; }
  int64_t rows() const { return rows_; }

 private:
  int64_t rows_;
  std::vector<uint8_t> data_;
  WeightMatrix matrix_{};
  std::unique_ptr<PackedWeights> packed_;
};

std::vector<Isa> available_isas() {
  std::vector<Isa> levels;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa <= detected_isa()) levels.push_back(isa);
  }
  return levels;
}

std::string describe(Isa isa, unsigned threads, int64_t tokens) {
  return std::string(isa_name(isa)) + ", " + std::to_string(threads) + " threads, " +
         std::to_string(tokens) + " tokens";
}

void expect_same_input_matches_separate_calls(const std::vector<Weight>& specs) {
  const int64_t cols = specs.front().cols;
  for (Isa isa : available_isas()) {
    for (unsigned threads : {1u, 3u}) {
      ThreadPool pool(threads);
      std::vector<std::unique_ptr<TestMatrix>> matrices;
      for (size_t i = 0; i < specs.size(); ++i) {
        matrices.push_back(std::make_unique<TestMatrix>(specs[i], 100 + static_cast<uint32_t>(i), pool));
      }
      for (int64_t tokens : {1, 3, 9, 40, 70}) {
        const int64_t x_stride = cols + 3;
        const std::vector<float> x = testing::random_values(static_cast<size_t>(x_stride * tokens), 7, -2.0f, 2.0f);
        std::vector<std::vector<float>> fused(specs.size()), separate(specs.size());
        std::vector<MatmulTarget> targets;
        MatmulScratch scratch;
        for (size_t i = 0; i < specs.size(); ++i) {
          const int64_t stride = matrices[i]->rows() + 5;
          fused[i].assign(static_cast<size_t>(stride * tokens), kUntouched);
          separate[i] = fused[i];
          targets.push_back({&matrices[i]->matrix(), fused[i].data(), stride});
          matmul(matrices[i]->matrix(), x.data(), x_stride, tokens, separate[i].data(), stride, pool,
                 scratch, isa);
        }
        matmul_same_input(targets, x.data(), x_stride, tokens, pool, scratch, isa);
        for (size_t i = 0; i < specs.size(); ++i) {
          ASSERT_EQ(fused[i], separate[i]) << "weight " << i << ", " << describe(isa, threads, tokens);
        }
      }
    }
  }
}

TEST(MatmulSameInput, QkvOfOnePackedTypeMatchesSeparateCalls) {
  expect_same_input_matches_separate_calls(
      {{DType::Q4_1, 96, 128, true}, {DType::Q4_1, 40, 128, true}, {DType::Q4_1, 40, 128, true}});
}

TEST(MatmulSameInput, MixedTypesAndPackingMatchSeparateCalls) {
  // Q4_0 packed and unpacked read different activation forms; Q8_0 shares Q4_0's quantization.
  expect_same_input_matches_separate_calls({{DType::Q4_0, 67, 256, true},
                                            {DType::Q8_0, 33, 256, false},
                                            {DType::Q4_0, 50, 256, false},
                                            {DType::F16, 17, 256, false}});
}

TEST(MatmulSameInput, KQuantsMatchSeparateCalls) {
  expect_same_input_matches_separate_calls({{DType::Q4_K, 70, 512, false}, {DType::Q6_K, 30, 512, false}});
}

TEST(MatmulSameInput, BadCallsAreErrors) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  TestMatrix m({DType::Q8_0, 16, 64, false}, 1, pool);
  std::vector<float> x(64), y(16);
  const MatmulTarget one{&m.matrix(), y.data(), 16};
  const std::vector<MatmulTarget> five(5, one);
  EXPECT_THROW(matmul_same_input(five, x.data(), 64, 1, pool, scratch), Error);
  EXPECT_THROW(matmul_same_input({}, x.data(), 64, 1, pool, scratch), Error);
  const MatmulTarget no_weight{nullptr, y.data(), 16};
  EXPECT_THROW(matmul_same_input({&no_weight, 1}, x.data(), 64, 1, pool, scratch), Error);
}

struct GluCase {
  Weight gate, up;
};

void expect_glu_matches_unfused(const GluCase& c) {
  const int64_t rows = c.gate.rows, cols = c.gate.cols;
  for (Isa isa : available_isas()) {
    for (unsigned threads : {1u, 3u}) {
      ThreadPool pool(threads);
      const TestMatrix gate(c.gate, 11, pool), up(c.up, 12, pool);
      for (bool geglu : {false, true}) {
        const GluRowFn glu = geglu ? &geglu_row : &swiglu_row;
        for (int64_t tokens : {1, 2, 8, 9, 17, 70}) {
          const int64_t x_stride = cols + 1, y_stride = rows + 7;
          const std::vector<float> x = testing::random_values(static_cast<size_t>(x_stride * tokens), 5, -2.0f, 2.0f);
          MatmulScratch scratch;
          std::vector<float> expected(static_cast<size_t>(y_stride * tokens), kUntouched);
          std::vector<float> expected_up = expected, fused = expected, fused_up = expected;
          matmul(gate.matrix(), x.data(), x_stride, tokens, expected.data(), y_stride, pool, scratch, isa);
          matmul(up.matrix(), x.data(), x_stride, tokens, expected_up.data(), y_stride, pool, scratch, isa);
          for (int64_t t = 0; t < tokens; ++t) {
            float* g = expected.data() + t * y_stride;
            glu(g, expected_up.data() + t * y_stride, rows, g);
          }
          matmul_glu({&gate.matrix(), fused.data(), y_stride}, {&up.matrix(), fused_up.data(), y_stride},
                     glu, x.data(), x_stride, tokens, pool, scratch, isa);
          ASSERT_EQ(fused, expected) << (geglu ? "geglu, " : "swiglu, ") << describe(isa, threads, tokens);
          ASSERT_EQ(fused_up, expected_up) << describe(isa, threads, tokens);
        }
      }
    }
  }
}

TEST(MatmulGlu, PackedGateAndUpMatchMatmulsThenActivation) {
  expect_glu_matches_unfused({{DType::Q4_1, 197, 128, true}, {DType::Q4_1, 197, 128, true}});
}

TEST(MatmulGlu, MixedFormsMatchMatmulsThenActivation) {
  expect_glu_matches_unfused({{DType::Q4_0, 200, 256, true}, {DType::Q8_0, 200, 256, false}});
}

TEST(MatmulGlu, KQuantsMatchMatmulsThenActivation) {
  expect_glu_matches_unfused({{DType::Q4_K, 75, 256, false}, {DType::Q6_K, 75, 256, false}});
}

TEST(MatmulGlu, WideRowsSplitIntoChunksOfOneGroup) {
  // 90 rows: with 3 threads, 2 decode tasks per thread come to 15 rows, so every chunk is one
  // 16-row group (with 1 thread, chunks of three).
  expect_glu_matches_unfused({{DType::Q8_0, 90, 4096, true}, {DType::Q8_0, 90, 4096, false}});
}

TEST(MatmulGlu, MismatchedShapesAreErrors) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  TestMatrix a({DType::Q8_0, 32, 64, false}, 1, pool), b({DType::Q8_0, 16, 64, false}, 2, pool);
  std::vector<float> x(64), ya(32), yb(32);
  EXPECT_THROW(matmul_glu({&a.matrix(), ya.data(), 32}, {&b.matrix(), yb.data(), 32}, &swiglu_row,
                          x.data(), 64, 1, pool, scratch),
               Error);
  EXPECT_THROW(matmul_glu({&a.matrix(), ya.data(), 32}, {&a.matrix(), yb.data(), 32}, nullptr,
                          x.data(), 64, 1, pool, scratch),
               Error);
}

}  // namespace
}  // namespace lumen::backend::cpu
