#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <string>

#include "checks.h"

namespace lumen::backend::conformance {

namespace {

// LUMEN_CONFORMANCE_TOLERANCE_SCALE=s multiplies every tolerance by s (default 1). At 0 the rows
// whose results are not exact fail for real: scripts/gpu_check.sh plants failures that way on a
// GPU host to show that a failing CUDA row fails the run instead of reading as a skip.
double tolerance_scale() {
  static const double scale = [] {
    const char* text = std::getenv("LUMEN_CONFORMANCE_TOLERANCE_SCALE");
    if (text == nullptr) return 1.0;
    try {
      return std::stod(text);
    } catch (const std::exception&) {
      ADD_FAILURE() << "LUMEN_CONFORMANCE_TOLERANCE_SCALE is not a number: " << text;
      return 1.0;
    }
  }();
  return scale;
}

}  // namespace

void expect_close(std::span<const float> got, std::span<const double> want, std::span<const double> tol,
                  std::string_view what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(tol.size(), want.size()) << what;
  size_t misses = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(static_cast<double>(got[i]) - want[i]);
    // NaN in the result fails too (the comparison is written so that it does).
    const double bound = tol[i] * tolerance_scale();
    if (!(error <= bound)) {
      if (++misses <= 5) {
        ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " +- " << bound;
      }
    }
  }
  EXPECT_EQ(misses, 0u) << what << ": " << misses << " of " << got.size() << " elements out of tolerance";
}

}  // namespace lumen::backend::conformance
