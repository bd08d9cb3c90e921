// src/backend/cuda/ssm_math.h on the host, driven the way ssm.cu's kernels drive it (the
// convolution one channel at a time, the scan as kSsmLanes lanes per channel whose partial sums
// are gathered per token), against the CPU backend:
//  - the scan equals the CPU's token scan (cpu::detail::ssm_scan_head_portable) bit for bit,
//    outputs and the states left behind, for states that are whole multiples of the lanes (every
//    Mamba 2 model's), and within f32 rounding for one that is not;
//  - the convolution's windows equal the CPU backend's bit for bit, its outputs within SiLU's
//    rounding (the CPU may take an eight-lane exp);
// over several sequences in one batch, from random states, with a decode row, a sequence shorter
// than the window and an empty one. A planted fault in the indexing (a lane's values, a group,
// a stride) changes these results.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ssm_scan.h"
#include "backend/cuda/ssm_math.h"
#include "unit/backend/kernel_test_util.h"

namespace lumen::backend::cuda {
namespace {

using backend::testing::random_values;

// Rows of the sequences, one after another in the batch: a prompt chunk, a decode row, a row
// shorter than a 4-tap window, nothing, and a longer chunk.
const std::vector<int64_t> kRows = {9, 1, 2, 0, 23};

int64_t total_rows() {
  int64_t n = 0;
  for (int64_t r : kRows) n += r;
  return n;
}

// ---- the scan ----

struct ScanShape {
  int64_t state_size, heads, head_dim, groups;
};

class SsmScanMath : public ::testing::TestWithParam<ScanShape> {};

// The kernel's work for every (sequence, channel) in turn: the lanes' registers loaded, per
// token each lane's partial sum, then the channel's lane 0 combining them, the registers stored.
void scan_like_the_kernel(const SsmScanArgs& a, const std::vector<SsmSeqDesc>& seqs) {
  for (const SsmSeqDesc& s : seqs) {
    for (int64_t i = 0; i < a.inner; ++i) {
      float h[kSsmLanes][kSsmMaxPerLane];
      for (int lane = 0; lane < kSsmLanes; ++lane) ssm_load_lane(a, s, i, lane, h[lane]);
      for (int64_t t = 0; t < s.n_tokens; ++t) {
        float partials[kSsmLanes];
        for (int lane = 0; lane < kSsmLanes; ++lane) {
          partials[lane] = ssm_scan_lane(a, s, t, i, lane, ssm_token_step(a, s, t, i / a.head_dim), h[lane]);
        }
        a.y[(s.first_token + t) * a.y_stride + i] = ssm_combine(a, s, t, i, partials);
      }
      for (int lane = 0; lane < kSsmLanes; ++lane) ssm_store_lane(a, s, i, lane, h[lane]);
    }
  }
}

TEST_P(SsmScanMath, MatchesTheCpusTokenScan) {
  const ScanShape shape = GetParam();
  const int64_t inner = shape.heads * shape.head_dim, bc = shape.state_size * shape.groups, n = total_rows();
  // Rows wider than their values (strided, as the mixer's column views are).
  const int64_t x_stride = inner + 3, dt_stride = shape.heads + 1, bc_stride = 2 * bc + 5, y_stride = inner + 2;
  const std::vector<float> x = random_values(static_cast<size_t>(n * x_stride), 1);
  const std::vector<float> dt = random_values(static_cast<size_t>(n * dt_stride), 2, -3.0f, 2.0f);
  const std::vector<float> bcv = random_values(static_cast<size_t>(n * bc_stride), 3);
  const std::vector<float> a = random_values(static_cast<size_t>(shape.heads), 4, -2.0f, -0.1f);
  const std::vector<float> d = random_values(static_cast<size_t>(shape.heads), 5);
  const std::vector<float> bias = random_values(static_cast<size_t>(shape.heads), 6, -1.0f, 1.0f);
  const size_t state_floats = static_cast<size_t>(inner * shape.state_size);
  std::vector<std::vector<float>> ours, cpus;
  for (size_t q = 0; q < kRows.size(); ++q) ours.push_back(random_values(state_floats, 10 + static_cast<uint32_t>(q)));
  cpus = ours;
  std::vector<float> y_ours(static_cast<size_t>(n * y_stride), -7.0f), y_cpu = y_ours;

  SsmScanArgs args;
  args.x = x.data();
  args.x_stride = x_stride;
  args.dt = dt.data();
  args.dt_stride = dt_stride;
  args.b = bcv.data();
  args.b_stride = bc_stride;
  args.c = bcv.data() + bc + 5;  // B and C: two column ranges of one row, as in the mixer
  args.c_stride = bc_stride;
  args.inner = inner;
  args.head_dim = shape.head_dim;
  args.state_size = shape.state_size;
  args.heads_per_group = shape.heads / shape.groups;
  args.a = a.data();
  args.d = d.data();
  args.dt_bias = bias.data();
  args.y = y_ours.data();
  args.y_stride = y_stride;
  std::vector<SsmSeqDesc> seqs;
  int64_t first = 0;
  for (size_t q = 0; q < kRows.size(); ++q) {
    seqs.push_back({first, kRows[q], nullptr, ours[q].data()});
    first += kRows[q];
  }
  scan_like_the_kernel(args, seqs);

  for (size_t q = 0; q < kRows.size(); ++q) {
    const int64_t f = seqs[q].first_token;
    const cpu::SsmScanTask task{x.data() + f * x_stride,
                                static_cast<size_t>(x_stride),
                                dt.data() + f * dt_stride,
                                static_cast<size_t>(dt_stride),
                                args.b + f * bc_stride,
                                static_cast<size_t>(bc_stride),
                                args.c + f * bc_stride,
                                static_cast<size_t>(bc_stride),
                                kRows[q],
                                shape.head_dim,
                                shape.state_size,
                                shape.heads / shape.groups,
                                a.data(),
                                d.data(),
                                bias.data(),
                                cpus[q].data(),
                                y_cpu.data() + f * y_stride,
                                static_cast<size_t>(y_stride)};
    for (int64_t h = 0; h < shape.heads; ++h) cpu::detail::ssm_scan_head_portable(task, h);
  }
  // Bit for bit when the state is whole lanes (the CPU's eight partial sums are the lanes'),
  // else the tail values are summed in another order.
  const bool exact = shape.state_size % kSsmLanes == 0;
  auto expect_same = [&](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      if (exact) {
        ASSERT_EQ(got[k], want[k]) << what << " " << k;
      } else {
        ASSERT_NEAR(got[k], want[k], 1e-5 * (1.0 + std::abs(want[k]))) << what << " " << k;
      }
    }
  };
  expect_same(y_ours, y_cpu, "y");
  for (size_t q = 0; q < kRows.size(); ++q) expect_same(ours[q], cpus[q], "state");
  // The scan really ran: states moved, outputs written (the empty sequence's state did not).
  EXPECT_NE(y_ours[0], -7.0f);
  EXPECT_EQ(ours[3], random_values(state_floats, 13));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SsmScanMath,
                         ::testing::Values(ScanShape{128, 4, 16, 1},  // Mamba 2's state, 16 values a lane
                                           ScanShape{16, 6, 8, 2},    // two groups of three heads
                                           ScanShape{256, 2, 4, 2},   // the largest state (32 a lane)
                                           ScanShape{64, 8, 2, 8},    // a group per head
                                           ScanShape{20, 3, 5, 1}));  // not whole lanes

// ---- the convolution ----

struct ConvShape {
  int64_t channels, kernel;
};

class SsmConvMath : public ::testing::TestWithParam<ConvShape> {};

TEST_P(SsmConvMath, MatchesTheCpuBackend) {
  const ConvShape shape = GetParam();
  const int64_t channels = shape.channels, kernel = shape.kernel, n = total_rows(), history = kernel - 1;
  const int64_t x_stride = channels + 7;  // a column range of the in-projection's rows
  const std::vector<float> x = random_values(static_cast<size_t>(n * x_stride), 21);
  const std::vector<float> w = random_values(static_cast<size_t>(channels * kernel), 22);
  const std::vector<float> bias = random_values(static_cast<size_t>(channels), 23, -0.5f, 0.5f);
  std::vector<std::vector<float>> ours, cpus;
  for (size_t q = 0; q < kRows.size(); ++q) {
    ours.push_back(random_values(static_cast<size_t>(channels * history), 30 + static_cast<uint32_t>(q)));
  }
  cpus = ours;
  std::vector<float> out_ours(static_cast<size_t>(n * channels), -7.0f), out_cpu = out_ours;

  const SsmConvArgs args{x.data(), x_stride, w.data(), kernel, bias.data(), channels, out_ours.data(), channels};
  std::vector<SsmSequence> cpu_seqs;
  int64_t first = 0;
  for (size_t q = 0; q < kRows.size(); ++q) {
    const SsmSeqDesc s{first, kRows[q], ours[q].data(), nullptr};
    for (int64_t c = 0; c < channels; ++c) ssm_conv_channel(args, s, c);  // a thread per channel
    cpu_seqs.push_back({first, kRows[q], f32_matrix(cpus[q].data(), channels, history), {}});
    first += kRows[q];
  }

  CpuBackend cpu(2);
  TensorView xv = f32_matrix(const_cast<float*>(x.data()), channels, n);
  xv.row_bytes = static_cast<size_t>(x_stride) * sizeof(float);
  const TensorView wv = f32_matrix(const_cast<float*>(w.data()), kernel, channels);
  const TensorView bv = f32_matrix(const_cast<float*>(bias.data()), channels, 1);
  TensorView ov = f32_matrix(out_cpu.data(), channels, n);
  cpu.ssm_conv(xv, wv, bv, cpu_seqs, ov);

  for (size_t k = 0; k < out_ours.size(); ++k) {
    ASSERT_NEAR(out_ours[k], out_cpu[k], std::ldexp(1.0, -20) * (1.0 + std::abs(out_cpu[k]))) << k;
  }
  for (size_t q = 0; q < kRows.size(); ++q) EXPECT_EQ(ours[q], cpus[q]) << "window of sequence " << q;
  EXPECT_NE(out_ours[0], -7.0f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SsmConvMath,
                         ::testing::Values(ConvShape{300, 4},                   // Mamba 2's kernel
                                           ConvShape{37, 2}, ConvShape{16, 1},  // no window at all
                                           ConvShape{9, 7}));                   // a window longer than most sequences

}  // namespace
}  // namespace lumen::backend::cuda
