#include <gtest/gtest.h>

#include <cmath>

#include "checks.h"

namespace lumen::backend::conformance {

void expect_close(std::span<const float> got, std::span<const double> want, std::span<const double> tol,
                  std::string_view what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(tol.size(), want.size()) << what;
  size_t misses = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(static_cast<double>(got[i]) - want[i]);
    // NaN in the result fails too (the comparison is written so that it does).
    if (!(error <= tol[i])) {
      if (++misses <= 5) {
        ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " +- " << tol[i];
      }
    }
  }
  EXPECT_EQ(misses, 0u) << what << ": " << misses << " of " << got.size() << " elements out of tolerance";
}

}  // namespace lumen::backend::conformance
