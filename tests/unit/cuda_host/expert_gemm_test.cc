// The expert GEMM (gemm_experts.cu) emulated on a CPU: its per-thread staging, fragment
// coordinates and result placement (expert_gemm_math.h), block by block with the grid's loops,
// the warps' products rebuilt from mma_fragments.h's coordinates (tensor_core_emulation.h),
// checked against the plain sum the kernel stands for: every weight dequantized as
// tensor::dequantize_row does and rounded to f16, times the f16 activation, in double, times
// the inverse scale. A GPU run checks the kernel itself (tests/unit/backend_cuda).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/expert_gemm_math.h"
#include "tensor/dtype.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"
#include "tensor_core_emulation.h"

namespace lumen::backend::cuda {
namespace {

using tensor::DType;
using namespace expert_gemm;

// The grouping launch_group_pairs writes: experts in increasing order, each group's pairs in any
// order (here shuffled, since the kernel must not depend on it); pairs with an id outside the
// experts in no group.
struct Groups {
  std::vector<int32_t> expert, begin, pairs;
};

Groups group_pairs(const std::vector<int32_t>& ids, int64_t n_experts, std::mt19937& rng) {
  Groups g;
  for (int32_t e = 0; e < n_experts; ++e) {
    std::vector<int32_t> members;
    for (size_t p = 0; p < ids.size(); ++p)
      if (ids[p] == e) members.push_back(static_cast<int32_t>(p));
    if (members.empty()) continue;
    std::shuffle(members.begin(), members.end(), rng);
    g.expert.push_back(e);
    g.begin.push_back(static_cast<int32_t>(g.pairs.size()));
    g.pairs.insert(g.pairs.end(), members.begin(), members.end());
  }
  g.begin.push_back(static_cast<int32_t>(g.pairs.size()));
  return g;
}

struct Problem {
  int64_t rows = 0, cols = 0, n_experts = 0, tokens = 0, used = 0;
  int64_t pairs_per_x_row = 1;  // x rows are tokens (gate and up) or pairs (down)
  float scale = 1.0f;           // the activations' power-of-two scale into f16's range
  int64_t grid_pair_tiles = 0;  // the launch's pair tiles (blocks loop over more); 0: enough
};

// One launch for one matrix: every block of the grid, in order, its 4 warps x 32 lanes.
template <DType F>
void emulate_gemm_experts(const Problem& pb, const std::vector<uint8_t>& weights, size_t row_bytes,
                          const Groups& groups, const std::vector<uint16_t>& x16, float inverse_scale,
                          std::vector<float>& y) {
  std::vector<uint16_t> weights_s(static_cast<size_t>(kRows * kStride)), pairs_s(static_cast<size_t>(kPairs * kStride));
  std::array<int32_t, kPairs> pair_ids{};
  const size_t expert_bytes = static_cast<size_t>(pb.rows) * row_bytes;
  const int64_t max_pairs = pb.tokens;
  const int64_t grid_y = pb.grid_pair_tiles > 0 ? pb.grid_pair_tiles : (max_pairs + kPairs - 1) / kPairs;
  for (size_t g = 0; g + 1 < groups.begin.size(); ++g) {
    const int32_t begin = groups.begin[g], count = groups.begin[g + 1] - begin;
    for (int64_t row0 = 0; row0 < pb.rows; row0 += kRows) {
      for (int64_t block_y = 0; block_y < grid_y; ++block_y) {
        for (int64_t tile = block_y; tile * kPairs < count; tile += grid_y) {
          const int n_pairs = static_cast<int>(std::min<int64_t>(kPairs, count - tile * kPairs));
          for (int t = 0; t < kPairs; ++t)
            pair_ids[static_cast<size_t>(t)] =
                t < n_pairs ? groups.pairs[static_cast<size_t>(begin + tile * kPairs + t)] : -1;
          std::vector<std::array<std::array<std::array<float, 4>, kNTiles>, kMTiles>> acc(kThreads);
          for (auto& lane_acc : acc)
            for (auto& m : lane_acc)
              for (auto& n : m) n.fill(0.0f);
          for (int64_t step = 0; step < pb.cols / kK; ++step) {
            for (int t = 0; t < kThreads; ++t) {
              const bool in_rows = row0 + t < pb.rows;
              const uint8_t* wrow = weights.data() + static_cast<size_t>(groups.expert[g]) * expert_bytes +
                                    static_cast<size_t>(in_rows ? row0 + t : 0) * row_bytes;
              stage_weight_unit<F>(wrow, step, in_rows, weights_s.data(), t);
              const PairPiece piece = pair_piece(t);
              const int32_t pair = pair_ids[static_cast<size_t>(piece.pair)];
              uint16_t* dst = pairs_s.data() + piece.pair * kStride + piece.first;
              for (int j = 0; j < 16; ++j) {
                dst[j] =
                    pair >= 0
                        ? x16[static_cast<size_t>((pair / pb.pairs_per_x_row) * pb.cols + piece.first + step * kK + j)]
                        : uint16_t{0};
              }
            }
            for (int kk = 0; kk < kK / mma::kK; ++kk) {
              for (int warp = 0; warp < kWarps; ++warp) {
                std::array<emulation::Fragments4, kMTiles> a;
                for (int mi = 0; mi < kMTiles; ++mi)
                  for (int lane = 0; lane < 32; ++lane)
                    mma::load_a(a_block(pairs_s.data(), warp, mi, kk), kStride, lane,
                                a[static_cast<size_t>(mi)][static_cast<size_t>(lane)].data());
                for (int ni = 0; ni < kNTiles; ++ni) {
                  emulation::Fragments2 b;
                  for (int lane = 0; lane < 32; ++lane)
                    mma::load_b(b_block(weights_s.data(), warp, ni, kk), kStride, lane,
                                b[static_cast<size_t>(lane)].data());
                  for (int mi = 0; mi < kMTiles; ++mi) {
                    std::array<float*, 32> c;
                    for (int lane = 0; lane < 32; ++lane)
                      c[static_cast<size_t>(lane)] =
                          acc[static_cast<size_t>(warp * 32 + lane)][static_cast<size_t>(mi)][static_cast<size_t>(ni)]
                              .data();
                    emulation::warp_mma(a[static_cast<size_t>(mi)], b, c);
                  }
                }
              }
            }
          }
          for (int t = 0; t < kThreads; ++t) {
            for (int mi = 0; mi < kMTiles; ++mi) {
              for (int ni = 0; ni < kNTiles; ++ni) {
                for (int i = 0; i < 4; ++i) {
                  const TileCoord c = accumulator_coord(t / 32, t % 32, mi, ni, i);
                  if (c.pair < n_pairs && row0 + c.row < pb.rows) {
                    y[static_cast<size_t>(pair_ids[static_cast<size_t>(c.pair)] * pb.rows + row0 + c.row)] =
                        acc[static_cast<size_t>(t)][static_cast<size_t>(mi)][static_cast<size_t>(ni)]
                           [static_cast<size_t>(i)] *
                        inverse_scale;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

template <DType F>
void check(const Problem& pb, uint32_t seed) {
  SCOPED_TRACE(tensor::dtype_name(F));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t row_bytes = *tensor::row_bytes(F, pb.cols);
  std::vector<uint8_t> weights(static_cast<size_t>(pb.n_experts * pb.rows) * row_bytes);
  std::vector<float> values(static_cast<size_t>(pb.cols));
  for (int64_t r = 0; r < pb.n_experts * pb.rows; ++r) {
    for (auto& v : values) v = normal(rng);
    tensor::quantize_row(F, values.data(), weights.data() + static_cast<size_t>(r) * row_bytes, pb.cols);
  }
  // Distinct experts per token, and one pair in no group (an id outside the experts).
  const int64_t pairs = pb.tokens * pb.used;
  std::vector<int32_t> ids(static_cast<size_t>(pairs));
  std::vector<int32_t> order(static_cast<size_t>(pb.n_experts));
  for (int64_t t = 0; t < pb.tokens; ++t) {
    for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<int32_t>(e);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t s = 0; s < pb.used; ++s) ids[static_cast<size_t>(t * pb.used + s)] = order[static_cast<size_t>(s)];
  }
  ids[3] = static_cast<int32_t>(pb.n_experts);
  const Groups groups = group_pairs(ids, pb.n_experts, rng);

  const int64_t x_rows = pairs / pb.pairs_per_x_row;
  std::vector<uint16_t> x16(static_cast<size_t>(x_rows * pb.cols));
  for (auto& h : x16) h = tensor::float_to_fp16(normal(rng) * 3.0f * pb.scale);
  const float inverse_scale = 1.0f / pb.scale;
  constexpr float kUnwritten = -12345.0f;
  std::vector<float> y(static_cast<size_t>(pairs * pb.rows), kUnwritten);
  emulate_gemm_experts<F>(pb, weights, row_bytes, groups, x16, inverse_scale, y);

  std::vector<float> w(static_cast<size_t>(pb.cols));
  double worst = 0.0;
  for (int64_t p = 0; p < pairs; ++p) {
    const int32_t e = ids[static_cast<size_t>(p)];
    for (int64_t r = 0; r < pb.rows; ++r) {
      const float got = y[static_cast<size_t>(p * pb.rows + r)];
      if (e < 0 || e >= pb.n_experts) {
        ASSERT_EQ(got, kUnwritten) << "pair " << p << " is in no group, but its row " << r << " was written";
        continue;
      }
      tensor::dequantize_row(F, weights.data() + static_cast<size_t>(e * pb.rows + r) * row_bytes, w.data(), pb.cols);
      double sum = 0.0, magnitude = 0.0;
      for (int64_t c = 0; c < pb.cols; ++c) {
        const double term =
            static_cast<double>(tensor::fp16_to_float(tensor::float_to_fp16(w[static_cast<size_t>(c)]))) *
            static_cast<double>(
                tensor::fp16_to_float(x16[static_cast<size_t>((p / pb.pairs_per_x_row) * pb.cols + c)]));
        sum += term;
        magnitude += std::fabs(term);
      }
      sum *= inverse_scale;
      magnitude *= inverse_scale;
      ASSERT_NE(got, kUnwritten) << "pair " << p << " row " << r << " was not written";
      worst = std::max(worst, std::fabs(got - sum) / magnitude);
    }
  }
  // f32 sums of f16 products (exact in f32) in another order: a few ulps of the magnitude.
  EXPECT_LT(worst, 1e-5) << "the largest difference from the sum in double, over the sum of magnitudes";
}

// Gate- and up-shaped: 2 pairs a token read the token's row; rows past one tile and not a
// multiple of it; groups of more than one pair tile; every staged type.
TEST(ExpertGemmEmulated, EveryStagedTypeMatchesTheSumItStandsFor) {
  Problem pb;
  pb.rows = 136;
  pb.cols = 256;
  pb.n_experts = 3;
  pb.tokens = 70;
  pb.used = 2;
  pb.pairs_per_x_row = 2;
  uint32_t seed = 1;
  [&]<DType... Fs>() { (check<Fs>(pb, seed++), ...); }
  .template operator()<DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                       DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16>();
}

// Down-shaped (one pair a row of x), activations scaled by 2^-2 into f16's range, and fewer pair
// tiles in the grid than a group has (the blocks loop over the rest).
TEST(ExpertGemmEmulated, ScaledActivationsAndBlocksThatLoopOverPairTiles) {
  Problem pb;
  pb.rows = 72;
  pb.cols = 96;
  pb.n_experts = 2;
  pb.tokens = 150;
  pb.used = 1;
  pb.scale = 0.25f;
  pb.grid_pair_tiles = 1;
  check<DType::Q8_0>(pb, 7);
}

TEST(ExpertGemmEmulated, StagedTypes) {
  EXPECT_TRUE(stages_type(DType::Q4_K));
  EXPECT_TRUE(stages_type(DType::BF16));
  EXPECT_FALSE(stages_type(DType::F32)) << "the host way multiplies F32 experts in f32";
  EXPECT_FALSE(stages_type(DType::I8));
}

}  // namespace
}  // namespace lumen::backend::cuda
