// The CUDA leading-candidates reduction (row_leading.cu) replayed on the host through the same
// functions (row_leading_math.h): three histogram passes that find the 64th largest key, the
// warp's bin search, the ordered collection, the bitonic sort. Held to the sampler's own
// selection (sampling::select_top) on rows with ties across the threshold, signed zeros,
// negative rows, short rows and a 152k vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/cuda/row_leading_math.h"
#include "sampling/dense_ops.h"

namespace lumen::backend::cuda::leading {
namespace {

struct Reduced {
  std::vector<int32_t> ids;
  std::vector<float> values;
};

// The kernel's steps, one thread after another.
Reduced emulate(const std::vector<float>& row) {
  const auto width = static_cast<int64_t>(row.size());
  const auto k = static_cast<uint32_t>(std::min<int64_t>(kCandidates, width));
  uint32_t prefix = 0, need = k;
  std::vector<uint32_t> histogram(kMaxBins);
  for (int pass = 0; pass < kPasses; ++pass) {
    const int bins = digit_bins(pass);
    std::fill(histogram.begin(), histogram.end(), 0u);
    for (const float v : row) {
      const uint32_t key = key_of(v);
      if ((key & prefix_mask(pass)) == prefix) ++histogram[digit_of(key, pass)];
    }
    // The warp's search: lane sums, their running sums from the top, the first lane to reach.
    uint32_t running = 0;
    BinChoice choice{};
    bool found = false;
    for (int lane = 0; lane < 32 && !found; ++lane) {
      uint32_t sum = 0;
      const int first = lane_first_bin(lane, bins);
      for (int b = first; b < first + bins / 32; ++b) sum += histogram[b];
      if (running + sum >= need) {
        choice = choose_bin_in_lane(histogram.data(), bins, lane, running, need);
        found = true;
      }
      running += sum;
    }
    EXPECT_TRUE(found);
    const BinChoice serial = choose_bin(histogram.data(), bins, need);
    EXPECT_EQ(choice.bin, serial.bin);
    EXPECT_EQ(choice.above, serial.above);
    prefix |= choice.bin << digit_shift(pass);
    need -= choice.above;
  }
  const uint32_t above = k - need;
  uint32_t keys[kCandidates];
  int32_t indices[kCandidates];
  float values[kCandidates];
  uint32_t n_above = 0, n_equal = 0;
  for (int64_t i = 0; i < width; ++i) {
    const uint32_t key = key_of(row[static_cast<size_t>(i)]);
    uint32_t slot = kCandidates;
    if (key > prefix) {
      slot = n_above++;
    } else if (key == prefix && n_equal < need) {
      slot = above + n_equal++;
    }
    if (slot == kCandidates) continue;
    EXPECT_LT(slot, k);
    keys[slot] = key;
    indices[slot] = static_cast<int32_t>(i);
    values[slot] = row[static_cast<size_t>(i)];
  }
  EXPECT_EQ(n_above, above);
  EXPECT_EQ(n_equal, need);
  for (uint32_t i = k; i < kCandidates; ++i) {
    keys[i] = kPadKey;
    indices[i] = kPadIndex;
    values[i] = 0.0f;
  }
  // The atomically placed entries come in any order: shuffle them as a device might.
  std::mt19937 rng(static_cast<uint32_t>(width));
  for (uint32_t i = above; i > 1; --i) {
    const auto j = static_cast<uint32_t>(rng() % i);
    std::swap(keys[i - 1], keys[j]);
    std::swap(indices[i - 1], indices[j]);
    std::swap(values[i - 1], values[j]);
  }
  for (int stage = 2; stage <= kCandidates; stage <<= 1) {
    for (int j = stage / 2; j > 0; j /= 2) {
      for (int i = 0; i < kCandidates; ++i) bitonic_step(keys, indices, values, i, stage, j);
    }
  }
  Reduced out;
  out.ids.assign(indices, indices + k);
  out.values.assign(values, values + k);
  return out;
}

void expect_select_top(const std::vector<float>& row, const char* what) {
  std::vector<sampling::Candidate> top;
  sampling::select_top(row, kCandidates, top);
  const Reduced got = emulate(row);
  ASSERT_EQ(got.ids.size(), top.size()) << what;
  for (size_t i = 0; i < top.size(); ++i) {
    ASSERT_EQ(got.ids[i], top[i].id) << what << ", candidate " << i;
    ASSERT_EQ(got.values[i], top[i].logit) << what << ", candidate " << i;
  }
}

std::vector<float> normal_row(size_t n, float spread, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> row(n);
  for (float& v : row) v = normal(rng);
  return row;
}

TEST(RowLeadingMath, KeysOrderValuesAsFloatsDo) {
  const float ordered[] = {-1e30f, -2.5f, -1.0f, -1e-30f, 0.0f, 1e-30f, 1.0f, 2.5f, 1e30f};
  for (size_t i = 1; i < std::size(ordered); ++i) EXPECT_LT(key_of(ordered[i - 1]), key_of(ordered[i]));
  EXPECT_EQ(key_of(-0.0f), key_of(0.0f));
  EXPECT_GT(key_of(-1e30f), kPadKey);
}

TEST(RowLeadingMath, TheReplayedKernelSelectsWhatTheSamplerSelects) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    expect_select_top(normal_row(4096 + seed * 37, 0.5f + static_cast<float>(seed % 5), seed), "normal row");
  }
  expect_select_top(normal_row(151936, 3.0f, 99), "a 152k vocabulary");
  for (const size_t n : {1u, 2u, 5u, 63u, 64u, 65u, 129u}) expect_select_top(normal_row(n, 1.0f, n), "a short row");
}

TEST(RowLeadingMath, TiesAtTheThresholdGoToTheLowerIndices) {
  // 200 values equal to the 64th largest: the lowest-indexed of them are taken.
  std::vector<float> row = normal_row(5000, 1.0f, 7);
  for (float& v : row) v = std::min(v, 1.0f);
  for (size_t i = 0; i < 40; ++i) row[i * 97 + 3] = 2.0f + static_cast<float>(i) * 0.01f;
  expect_select_top(row, "ties across the threshold");
  // Every value equal.
  expect_select_top(std::vector<float>(3000, 0.25f), "a constant row");
  // Signed zeros are equal values: index order among them.
  std::vector<float> zeros(500, -1.0f);
  for (size_t i = 0; i < zeros.size(); i += 3) zeros[i] = (i % 2 == 0) ? 0.0f : -0.0f;
  expect_select_top(zeros, "signed zeros");
  // Only negative values, some equal in the top ones.
  std::vector<float> negative = normal_row(2000, 2.0f, 11);
  for (float& v : negative) v = -std::abs(v) - 1.0f;
  negative[10] = negative[1500] = negative[700] = -1.0f;
  expect_select_top(negative, "a negative row");
  // Values that differ only in the last bits (the third pass decides).
  std::vector<float> close(1000);
  for (size_t i = 0; i < close.size(); ++i) close[i] = std::nextafter(1.0f, 2.0f) + static_cast<float>(i % 300) * 1e-7f;
  expect_select_top(close, "values a few ulps apart");
}

}  // namespace
}  // namespace lumen::backend::cuda::leading
