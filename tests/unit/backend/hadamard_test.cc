// The Walsh-Hadamard rotation of a quantized KV cache's heads: against Sylvester's matrix in
// f64, its own inverse, dot products kept, and the backend op's checks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/hadamard.h"
#include "kernel_test_util.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::random_values;

// Sylvester's construction: H_1 = [1], H_2n = [[H_n, H_n], [H_n, -H_n]]; entry (i, j) is
// (-1)^popcount(i & j).
double sylvester(int64_t i, int64_t j) { return (__builtin_popcountll(static_cast<uint64_t>(i & j)) % 2) != 0 ? -1.0 : 1.0; }

TEST(Hadamard, EqualsSylvestersMatrixOverSqrtN) {
  for (const int64_t n : {1, 2, 4, 32, 64, 256}) {
    const auto x = random_values(static_cast<size_t>(n), 7u + static_cast<uint32_t>(n));
    std::vector<float> y = x;
    hadamard_rotate(y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      double want = 0.0;
      for (int64_t j = 0; j < n; ++j) want += sylvester(i, j) * x[static_cast<size_t>(j)];
      want /= std::sqrt(static_cast<double>(n));
      // log2(n) f32 additions of values up to 1, then one scaling.
      EXPECT_NEAR(y[static_cast<size_t>(i)], want, 1e-5 * std::sqrt(static_cast<double>(n))) << "n=" << n << " i=" << i;
    }
  }
}

TEST(Hadamard, BackendRotatesEveryHeadOfEveryRowAndUndoesItself) {
  CpuBackend backend(2);
  const int64_t head = 64, row = 4 * head, rows = 5;
  const auto original = random_values(static_cast<size_t>(row * rows), 3, -4.0f, 4.0f);
  const auto other = random_values(static_cast<size_t>(row * rows), 4, -4.0f, 4.0f);
  std::vector<float> x = original, y = other;
  TensorView xv = f32_matrix(x.data(), row, rows), yv = f32_matrix(y.data(), row, rows);
  backend.rotate_heads(xv, head);
  backend.rotate_heads(yv, head);
  for (int64_t h = 0; h < row * rows; h += head) {
    std::vector<float> want(original.begin() + h, original.begin() + h + head);
    hadamard_rotate(want.data(), head);
    double dot_before = 0.0, dot_after = 0.0;
    for (int64_t i = 0; i < head; ++i) {
      const auto at = static_cast<size_t>(h + i);
      EXPECT_EQ(x[at], want[static_cast<size_t>(i)]) << "value " << at;
      dot_before += static_cast<double>(original[at]) * other[at];
      dot_after += static_cast<double>(x[at]) * y[at];
    }
    // What lets the queries be rotated like the keys: every head's q . k is unchanged.
    EXPECT_NEAR(dot_after, dot_before, 1e-4 * (1.0 + std::fabs(dot_before))) << "head at " << h;
  }
  backend.rotate_heads(xv, head);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], original[i], 1e-5) << "value " << i;
}

TEST(Hadamard, BackendRefusesHeadsThatAreNoPowerOfTwoOrDoNotDivideTheRow) {
  CpuBackend backend(1);
  std::vector<float> x(192, 1.0f);
  TensorView v = f32_matrix(x.data(), 192, 1);
  EXPECT_THROW(backend.rotate_heads(v, 48), Error);   // not a power of two
  EXPECT_THROW(backend.rotate_heads(v, 128), Error);  // does not divide 192
  EXPECT_THROW(backend.rotate_heads(v, 0), Error);
  EXPECT_EQ(x[0], 1.0f);  // nothing was touched
}

}  // namespace
}  // namespace lumen::backend::cpu
