#pragma once
// How far two runs' image features are apart, as the vision tests bound it: the largest
// difference relative to the reference's largest magnitude.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace lumen::testing {

// max |got - want| / max |want|.
inline double relative_difference(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return diff / scale;
}

}  // namespace lumen::testing
