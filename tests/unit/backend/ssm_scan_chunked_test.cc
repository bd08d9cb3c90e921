// The chunked (SSD) scan against the token-by-token scan it replaces for prompts (and the token
// scan's AVX2 build, decode's, against its portable one), on Mamba 2's
// real shapes (mamba2-130m: heads of 64 channels, state 128, one group; mamba2-mini: state 64,
// two groups) and an odd head width, over prompts of whole and partial chunks, from a nonzero
// state: every output and the state left behind agree within f32 rounding of the reordered
// sums. (The backend conformance table checks both against a double-precision reference.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/ssm_scan.h"
#include "backend/cpu/ssm_scan_chunked.h"
#include "kernel_test_util.h"

namespace lumen::backend::cpu {
namespace {

using testing::random_values;

struct Shape {
  int64_t head_dim, state_size, heads, groups, tokens;
};

struct ScanResult {
  std::vector<float> y, state;
};

enum class Form { kPortable, kTokenAvx2, kChunked };

// Runs every head over `tokens` rows laid out as the model's projection lays them out (x, dt,
// B, C side by side in one row): by the portable token scan, its AVX2 build, or the chunked one.
ScanResult scan(const Shape& sh, Form form) {
  const int64_t inner = sh.heads * sh.head_dim, bc = sh.groups * sh.state_size;
  const int64_t width = inner + sh.heads + 2 * bc;
  std::vector<float> rows = random_values(static_cast<size_t>(width * sh.tokens), 11);
  // Steps as trained models have them: softplus'd to roughly 0.002 .. 0.3.
  for (int64_t t = 0; t < sh.tokens; ++t) {
    for (int64_t h = 0; h < sh.heads; ++h) rows[static_cast<size_t>(t * width + inner + h)] *= 2.0f;
  }
  const std::vector<float> a = random_values(static_cast<size_t>(sh.heads), 12, -16.0f, -1.0f);
  const std::vector<float> d = random_values(static_cast<size_t>(sh.heads), 13, 0.5f, 1.5f);
  const std::vector<float> dt_bias = random_values(static_cast<size_t>(sh.heads), 14, -4.0f, -2.0f);
  ScanResult run{std::vector<float>(static_cast<size_t>(inner * sh.tokens)),
                 random_values(static_cast<size_t>(inner * sh.state_size), 15)};
  SsmScanTask task{rows.data(),
                   static_cast<size_t>(width),
                   rows.data() + inner,
                   static_cast<size_t>(width),
                   rows.data() + inner + sh.heads,
                   static_cast<size_t>(width),
                   rows.data() + inner + sh.heads + bc,
                   static_cast<size_t>(width),
                   sh.tokens,
                   sh.head_dim,
                   sh.state_size,
                   sh.heads / sh.groups,
                   a.data(),
                   d.data(),
                   dt_bias.data(),
                   run.state.data(),
                   run.y.data(),
                   static_cast<size_t>(inner)};
  if (form != Form::kChunked) {
    for (int64_t h = 0; h < sh.heads; ++h) {
      if (form == Form::kPortable) {
        detail::ssm_scan_head_portable(task, h);
      } else {
        detail::ssm_scan_head_avx2(task, h);
      }
    }
    return run;
  }
  const size_t per_group = ssm_chunk_scores_floats(sh.tokens);
  // NaN-filled: a kernel that reads scratch it did not write gives NaN outputs.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> scores(per_group * static_cast<size_t>(sh.groups), nan);
  std::vector<float> scratch(ssm_chunk_scratch_floats(sh.head_dim, sh.state_size), nan);
  const int64_t chunks = (sh.tokens + kSsmChunk - 1) / kSsmChunk;
  for (int64_t g = 0; g < sh.groups; ++g) {
    for (int64_t k = 0; k < chunks; ++k) ssm_chunk_scores(task, g, k, scores.data() + g * per_group, scratch.data());
  }
  for (int64_t h = 0; h < sh.heads; ++h) {
    ssm_scan_head_chunked(task, h, scores.data() + (h / (sh.heads / sh.groups)) * per_group, scratch.data());
  }
  return run;
}

// Largest difference relative to the largest magnitude of the reference.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, scale = 0.0;
  size_t non_finite = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    non_finite += std::isfinite(got[i]) ? 0 : 1;
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_EQ(non_finite, 0u) << "values not finite (scratch read before it was written?)";
  return diff / scale;
}

TEST(SsmScanChunked, AgreesWithTheTokenScanOnRealShapes) {
  if (!ssm_chunked_available(64, 128) || !detail::have_ssm_scan_avx2()) GTEST_SKIP() << "these scans need AVX2";
  const Shape shapes[] = {
      {64, 128, 24, 1, 512},  // mamba2-130m, pp512
      {64, 128, 24, 1, 100},  // a chunk and a partial one
      {64, 64, 8, 2, 200},    // mamba2-mini
      {20, 16, 6, 3, 70},     // a head width that is not a multiple of 16
      {64, 128, 4, 1, 17},    // shorter than a chunk
  };
  for (const Shape& sh : shapes) {
    const ScanResult want = scan(sh, Form::kPortable), got = scan(sh, Form::kChunked);
    const double y_error = relative_error(got.y, want.y), state_error = relative_error(got.state, want.state);
    EXPECT_LT(y_error, 1e-5) << "y, head_dim " << sh.head_dim << " state " << sh.state_size << " tokens " << sh.tokens;
    EXPECT_LT(state_error, 1e-5) << "state, head_dim " << sh.head_dim << " tokens " << sh.tokens;
    RecordProperty("y_error_" + std::to_string(sh.tokens), std::to_string(y_error));
    // Decode's scan: the same loop on eight lanes with FMA.
    const ScanResult token = scan(sh, Form::kTokenAvx2);
    EXPECT_LT(relative_error(token.y, want.y), 1e-6) << "AVX2 token scan, tokens " << sh.tokens;
    EXPECT_LT(relative_error(token.state, want.state), 1e-6) << "AVX2 token scan, tokens " << sh.tokens;
  }
}

// Decode's AVX2 scan takes the state eight values at a time: state sizes with a tail past the
// last eight (or shorter than eight), and odd head widths, take its remainder path. Each agrees
// with the portable loop up to FMA's rounding.
TEST(SsmScanToken, Avx2AgreesWithPortableOnRemainderShapes) {
  if (!detail::have_ssm_scan_avx2()) GTEST_SKIP() << "this scan needs AVX2";
  const Shape shapes[] = {
      {64, 128, 24, 1, 1},  // mamba2-130m, one decode row
      {6, 12, 3, 1, 5},     // four state values past eight
      {7, 5, 4, 2, 3},      // a state shorter than eight lanes, two groups
      {1, 9, 2, 2, 2},      // one channel a head, one value past eight
  };
  for (const Shape& sh : shapes) {
    const ScanResult want = scan(sh, Form::kPortable), got = scan(sh, Form::kTokenAvx2);
    EXPECT_LT(relative_error(got.y, want.y), 1e-6) << "head_dim " << sh.head_dim << " state " << sh.state_size;
    EXPECT_LT(relative_error(got.state, want.state), 1e-6) << "head_dim " << sh.head_dim << " state " << sh.state_size;
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
