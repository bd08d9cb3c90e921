// Confined draws' rows through the CUDA step boundary (StepMetadata::row_forms, row_leading.cu):
// with device_leading on, a Leading row comes back as its 64 most likely tokens (the sampler's
// select_top, ties to the lower index), whether it is finite and, when asked, its total weight;
// its logits are not copied, and copy_logit_rows brings rows back after the step. The other rows
// come back whole. Off, every row comes back whole and no entry is computed.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cuda_test_util.h"
#include "sampling/dense_ops.h"

namespace lumen::backend::testing {
namespace {

constexpr float kUntouched = -12345.0f;
constexpr auto kWhole = static_cast<uint8_t>(RowForm::Whole);
constexpr auto kArgmax = static_cast<uint8_t>(RowForm::Argmax);
constexpr auto kLeading = static_cast<uint8_t>(RowForm::Leading);

struct LeadingStep {
  int64_t width = 0;
  std::vector<float> rows;  // what the step's output projection wrote
  std::vector<float> host;  // where end_step left the logits
  std::vector<RowArgmax> argmax;
  std::vector<RowLeading> leading;
};

LeadingStep run_step(int64_t width, const std::vector<uint8_t>& forms, const std::vector<float>& scales, bool on) {
  const auto n = static_cast<int64_t>(forms.size());
  CudaBackendOptions options = gpu()->options();
  const CudaBackendOptions saved = options;
  options.device_leading = on;
  options.device_argmax = on;
  gpu()->set_options(options);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  LeadingStep s;
  s.width = width;
  s.rows.resize(static_cast<size_t>(n * width));
  for (float& v : s.rows) v = normal(rng);
  if (n > 2 && width > 1000) {
    // Row 2: about 35 values lie above 10.5 (3.5 sigma), then 100 equal to it: ties across the cut.
    float* row = s.rows.data() + 2 * width;
    for (int64_t i = 0; i < 100; ++i) row[i * 9 + 1] = 10.5f;
  }
  if (n > 3) s.rows[static_cast<size_t>(3 * width + 7)] = std::numeric_limits<float>::quiet_NaN();
  s.host.assign(s.rows.size(), kUntouched);
  s.argmax.assign(static_cast<size_t>(n), RowArgmax{});
  s.leading.assign(static_cast<size_t>(n), RowLeading{});
  std::vector<int32_t> tokens(static_cast<size_t>(n), 1), positions(static_cast<size_t>(n), 0), logit_rows;
  for (int32_t r = 0; r < n; ++r) logit_rows.push_back(r);
  StepMetadata step;
  step.tokens = tokens;
  step.positions = positions;
  step.logit_rows = logit_rows;
  step.logits = s.host.data();
  step.logit_width = width;
  step.row_forms = forms;
  step.argmax = s.argmax.data();
  step.leading = s.leading.data();
  step.leading_scale = scales;
  gpu()->begin_step(step);
  TensorView out = gpu()->step_logits();
  gpu()->copy_from_host(s.rows.data(), out);
  gpu()->end_step();
  gpu()->set_options(saved);
  return s;
}

void expect_leading(const LeadingStep& s, size_t r, float scale) {
  const std::span<const float> row(s.rows.data() + r * static_cast<size_t>(s.width), static_cast<size_t>(s.width));
  const RowLeading& got = s.leading[r];
  const bool finite = std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); });
  EXPECT_EQ(got.finite, finite ? 1 : 0) << r;
  ASSERT_EQ(got.count, std::min<int64_t>(kLeadingCandidates, s.width)) << r;
  if (!finite) return;  // the engine fails such a row: its candidates do not matter
  std::vector<sampling::Candidate> top;
  sampling::select_top(row, kLeadingCandidates, top);
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(got.ids[i], top[i].id) << "row " << r << ", candidate " << i;
    EXPECT_EQ(got.logits[i], top[i].logit) << "row " << r << ", candidate " << i;
  }
  if (scale == 0.0f) {
    EXPECT_EQ(got.total, 0.0) << r;
  } else {
    // expf on the device, fast_exp on the host: the same sum to a few parts in a million.
    const double host = sampling::sum_exp(row, top[0].logit, scale);
    EXPECT_NEAR(got.total, host, host * 2e-5) << r;
  }
}

TEST(CudaRowLeading, LeadingRowsComeBackAsTheirCandidatesAndTheOthersWhole) {
  LUMEN_REQUIRE_CUDA();
  const int64_t width = 151936;
  const std::vector<uint8_t> forms = {kLeading, kWhole, kLeading, kLeading, kArgmax, kLeading, kWhole};
  const std::vector<float> scales = {0.0f, 0.0f, 1.25f, 0.0f, 0.0f, 0.5f, 0.0f};
  const LeadingStep s = run_step(width, forms, scales, true);
  for (size_t r = 0; r < forms.size(); ++r) {
    const std::span<const float> row(s.rows.data() + r * width, width);
    const std::span<const float> host(s.host.data() + r * width, width);
    if (forms[r] == kWhole) {
      EXPECT_TRUE(std::equal(host.begin(), host.end(), row.begin())) << r;
      continue;
    }
    EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](float v) { return v == kUntouched; })) << r;
    if (forms[r] == kLeading) expect_leading(s, r, scales[r]);
  }
  EXPECT_GE(s.argmax[4].token, 0);  // the greedy row beside them
  // After the step, Leading rows come back whole on request, each to its place.
  std::vector<float> back(s.rows.size(), kUntouched);
  const std::vector<int32_t> wanted = {5, 2};
  gpu()->copy_logit_rows(wanted, back.data());
  for (size_t r = 0; r < forms.size(); ++r) {
    const bool asked = r == 5 || r == 2;
    for (int64_t i = 0; i < width; ++i) {
      const size_t at = r * static_cast<size_t>(width) + static_cast<size_t>(i);
      ASSERT_EQ(back[at], asked ? s.rows[at] : kUntouched) << "row " << r << ", value " << i;
    }
  }
  const std::vector<int32_t> outside = {static_cast<int32_t>(forms.size())};
  EXPECT_THROW(gpu()->copy_logit_rows(outside, back.data()), Error);
}

TEST(CudaRowLeading, ARowShorterThanTheListIsAllOfIt) {
  LUMEN_REQUIRE_CUDA();
  const std::vector<uint8_t> forms = {kLeading, kLeading};
  const std::vector<float> scales = {1.0f, 0.0f};
  const LeadingStep s = run_step(50, forms, scales, true);
  expect_leading(s, 0, 1.0f);
  expect_leading(s, 1, 0.0f);
}

TEST(CudaRowLeading, WithTheOptionOffEveryRowComesBackWhole) {
  LUMEN_REQUIRE_CUDA();
  const std::vector<uint8_t> forms = {kLeading, kWhole, kLeading};
  const std::vector<float> scales = {1.0f, 0.0f, 0.0f};
  const LeadingStep s = run_step(4099, forms, scales, false);
  for (size_t r = 0; r < forms.size(); ++r) EXPECT_EQ(s.leading[r].count, -1) << r;  // not reduced
  for (size_t i = 0; i < s.rows.size(); ++i) {
    if (std::isnan(s.rows[i])) continue;
    ASSERT_EQ(s.host[i], s.rows[i]) << i;
  }
  std::vector<float> back(4099);
  const std::vector<int32_t> first = {0};
  EXPECT_THROW(
      {
        gpu()->begin_step({});
        gpu()->copy_logit_rows(first, back.data());
      },
      Error);
  gpu()->abort_step();
}

}  // namespace
}  // namespace lumen::backend::testing
