// The int8 tensor-core GEMM (gemm_int8.cu) emulated on a CPU: its per-thread staging, fragment
// loads, scales and result placement (int8_gemm_math.h), block by block over the grid, the warps'
// products rebuilt from the PTX ISA's byte coordinates of mma.m16n8k32 (int8_mma_emulation.h).
// Checked bit for bit against the sum the kernel stands for: each block's legacy_dot (bit-exact
// with the CPU's block dot product, block_decode_test.cc) added in column order. A GPU run checks
// the kernel itself (tests/unit/backend_cuda/int8_gemm_test.cc).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cuda/block_decode.h"
#include "backend/cuda/int8_gemm_math.h"
#include "int8_mma_emulation.h"
#include "tensor/block_formats.h"
#include "tensor/dtype.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace lumen::backend::cuda {
namespace {

using tensor::DType;
using namespace int8_gemm;

// The activation type each weight type's GEMV reads (gemv_activation_type).
DType activation_type(DType w) { return w == DType::Q4_1 || w == DType::Q5_1 ? DType::Q8_1 : DType::Q8_0; }

// Activations quantized by the CPU, unpacked into carve_q8_activations' layout.
struct Activations {
  std::vector<int8_t> codes;  // token * cols + column
  std::vector<float> d, s;    // token * blocks + block
};

Activations quantize_tokens(DType act, int64_t n_tokens, int64_t cols, std::mt19937& rng) {
  Activations a;
  const int64_t blocks = cols / 32;
  a.codes.resize(static_cast<size_t>(n_tokens * cols));
  std::vector<float> x(static_cast<size_t>(cols));
  std::vector<uint8_t> packed(*tensor::row_bytes(act, cols));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (auto& v : x) v = normal(rng);
    cpu::quantize_activation_row(act, x.data(), packed.data(), cols);
    for (int64_t b = 0; b < blocks; ++b) {
      int8_t* dst = a.codes.data() + t * cols + 32 * b;
      if (act == DType::Q8_1) {
        tensor::BlockQ8_1 block;
        std::memcpy(&block, packed.data() + static_cast<size_t>(b) * sizeof block, sizeof block);
        std::memcpy(dst, block.qs, 32);
        a.d.push_back(tensor::fp16_to_float(block.d));
        a.s.push_back(tensor::fp16_to_float(block.s));
      } else {
        tensor::BlockQ8_0 block;
        std::memcpy(&block, packed.data() + static_cast<size_t>(b) * sizeof block, sizeof block);
        std::memcpy(dst, block.qs, 32);
        a.d.push_back(tensor::fp16_to_float(block.d));
        a.s.push_back(0.0f);
      }
    }
  }
  return a;
}

std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(cols));
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : x) v = normal(rng);
    tensor::quantize_row(type, x.data(), w.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  return w;
}

using emulation::warp_mma_s8;
using AFragments = emulation::IntFragments4;
using BFragments = emulation::IntFragments2;

// The kernel, block by block, its 4 warps x 32 lanes emulated in gemm_int8_kernel's order.
template <DType F>
void emulate(const Int8GemmArgs& a) {
  const int64_t blocks = a.cols / 32;
  auto stage = std::make_unique<Stage>();
  Stage& s = *stage;
  for (int64_t by = 0; by * kTokens < a.n_tokens; ++by) {
    for (int64_t bx = 0; bx * kRows < a.rows; ++bx) {
      const int64_t row0 = bx * kRows, tok0 = by * kTokens;
      std::vector<float> acc(static_cast<size_t>(kWarps * 32 * kMTiles * kNTiles * 4), 0.0f);
      const auto acc_at = [&](int warp, int lane, int mi, int ni) {
        return acc.data() + (((warp * 32 + lane) * kMTiles + mi) * kNTiles + ni) * 4;
      };
      for (int64_t b0 = 0; b0 < blocks; b0 += kStepBlocks) {
        std::memset(&s, 0xA5, sizeof s);  // what a step does not stage must not be read
        for (int t = 0; t < kThreads; ++t) {
          stage_weights<F>(a, row0, b0, t, s);
          stage_tokens<F>(a, tok0, b0, t, s);
        }
        for (int k = 0; k < kStepBlocks; ++k) {
          for (int warp = 0; warp < kWarps; ++warp) {
            std::array<LaneScales, 32> scales;
            std::array<AFragments, kMTiles> af;
            std::array<BFragments, kNTiles> bf;
            for (int lane = 0; lane < 32; ++lane) {
              const auto l = static_cast<size_t>(lane);
              load_lane_scales<F>(s, warp, lane, k, scales[l]);
              for (int mi = 0; mi < kMTiles; ++mi)
                load_a(s, warp_first_token(warp, mi), k, lane, af[static_cast<size_t>(mi)][l].data());
              for (int ni = 0; ni < kNTiles; ++ni)
                load_b(s, warp_first_row(warp, ni), k, lane, bf[static_cast<size_t>(ni)][l].data());
            }
            for (int ni = 0; ni < kNTiles; ++ni) {
              for (int mi = 0; mi < kMTiles; ++mi) {
                emulation::IntAccumulators c{};
                warp_mma_s8(af[static_cast<size_t>(mi)], bf[static_cast<size_t>(ni)], c);
                for (int lane = 0; lane < 32; ++lane) {
                  accumulate<F>(scales[static_cast<size_t>(lane)], mi, ni, c[static_cast<size_t>(lane)].data(),
                                acc_at(warp, lane, mi, ni));
                }
              }
            }
          }
        }
      }
      for (int warp = 0; warp < kWarps; ++warp) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int mi = 0; mi < kMTiles; ++mi) {
            for (int ni = 0; ni < kNTiles; ++ni) {
              for (int i = 0; i < 4; ++i) {
                const TileCoord c = accumulator_coord(warp, lane, mi, ni, i);
                const int64_t token = tok0 + c.token, row = row0 + c.row;
                if (token < a.n_tokens && row < a.rows) a.y[token * a.y_stride + row] = acc_at(warp, lane, mi, ni)[i];
              }
            }
          }
        }
      }
    }
  }
}

struct Shape {
  int64_t rows, cols, n_tokens;
};

template <DType F>
void check(const Shape& shape, std::mt19937& rng) {
  const DType act = activation_type(F);
  const auto w = random_weights(F, shape.rows, shape.cols, rng);
  const Activations x = quantize_tokens(act, shape.n_tokens, shape.cols, rng);
  const int64_t y_stride = shape.rows + 3;  // a strided output, as the model's views are
  std::vector<float> y(static_cast<size_t>(shape.n_tokens * y_stride), -7.0f);
  Int8GemmArgs a;
  a.w = w.data();
  a.row_bytes = *tensor::row_bytes(F, shape.cols);
  a.rows = shape.rows;
  a.cols = shape.cols;
  a.xq = x.codes.data();
  a.xd = x.d.data();
  a.xs = x.s.data();
  a.n_tokens = shape.n_tokens;
  a.y = y.data();
  a.y_stride = y_stride;
  emulate<F>(a);

  const int64_t blocks = shape.cols / 32;
  for (int64_t t = 0; t < shape.n_tokens; ++t) {
    for (int64_t r = 0; r < shape.rows; ++r) {
      float want = 0.0f;
      double magnitude = 0.0;
      for (int64_t b = 0; b < blocks; ++b) {
        hd::LegacyBlock lb;
        hd::decode_legacy<F>(w.data() + r * static_cast<int64_t>(a.row_bytes) + b * hd::kBlockBytes<F>, lb);
        int codes[8];
        std::memcpy(codes, x.codes.data() + t * shape.cols + 32 * b, 32);
        const auto at = static_cast<size_t>(t * blocks + b);
        const float term = hd::legacy_dot<F>(lb, codes, x.d[at], x.s[at]);
        want = hd::add_rn(want, term);
        magnitude += std::fabs(term);
      }
      const float got = y[static_cast<size_t>(t * y_stride + r)];
      ASSERT_EQ(got, want) << tensor::dtype_name(F) << " " << shape.rows << "x" << shape.cols << " for "
                           << shape.n_tokens << " tokens: token " << t << " row " << r << " (sum of |terms| "
                           << magnitude << ")";
    }
    // The stride's gap is left alone.
    for (int64_t r = shape.rows; r < y_stride; ++r) ASSERT_EQ(y[static_cast<size_t>(t * y_stride + r)], -7.0f);
  }
}

TEST(CudaInt8GemmEmulation, MatchesTheBlockSumsBitForBit) {
  std::mt19937 rng(2026);
  // Whole tiles, ragged rows and tokens, columns that are not whole steps of 4 blocks, one row,
  // one token, and several tiles both ways.
  const Shape shapes[] = {{64, 128, 64}, {100, 96, 9}, {1, 32, 1}, {130, 160, 70}, {64, 4096, 16}, {200, 224, 129}};
  for (const Shape& shape : shapes) {
    check<DType::Q4_0>(shape, rng);
    check<DType::Q4_1>(shape, rng);
    check<DType::Q5_0>(shape, rng);
    check<DType::Q5_1>(shape, rng);
    check<DType::Q8_0>(shape, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(CudaInt8GemmEmulation, TakesTheLegacyTypesOnly) {
  for (const DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) EXPECT_TRUE(takes_type(t));
  for (const DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_K, DType::Q6_K, DType::Q8_1, DType::Q8_K})
    EXPECT_FALSE(takes_type(t)) << tensor::dtype_name(t);
}

}  // namespace
}  // namespace lumen::backend::cuda
