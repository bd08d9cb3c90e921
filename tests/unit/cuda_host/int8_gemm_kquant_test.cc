// The int8 tensor-core GEMM for K-quant weights (gemm_int8_kquant.cu) emulated on a CPU: its
// per-thread staging, fragment loads, scales, mins product and result placement
// (int8_gemm_kquant_math.h), block by block over the grid; the warps' int8 products rebuilt from
// the PTX ISA's byte coordinates (int8_mma_emulation.h) and the f16 one from mma_fragments.h's
// (tensor_core_emulation.h). Checked bit for bit against the sum the kernel stands for: each
// super-block's term as the K-quant GEMV forms it (hd::decode_kunit, hd::kunit_dot,
// hd::ksuper_value, bit-exact with the CPU: block_decode_test.cc) added in column order. A GPU run
// checks the kernel itself (tests/unit/backend_cuda/matmul_test.cc, CudaInt8Gemm).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cuda/block_decode.h"
#include "backend/cuda/int8_gemm_kquant_math.h"
#include "int8_mma_emulation.h"
#include "tensor/block_formats.h"
#include "tensor/dtype.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"
#include "tensor_core_emulation.h"

namespace lumen::backend::cuda {
namespace {

using tensor::DType;
using namespace int8_gemm_kquant;
using int8_gemm::accumulator_coord;
using int8_gemm::kWarps;
using int8_gemm::TileCoord;
using int8_gemm::warp_first_row;
using int8_gemm::warp_first_token;

// Q8_K activations quantized by the CPU, unpacked into carve_q8_activations' layout.
struct Activations {
  std::vector<int8_t> codes;   // token * cols + column
  std::vector<float> d;        // token * supers + super-block
  std::vector<int32_t> bsums;  // token * cols / 16 + half
};

Activations quantize_tokens(int64_t n_tokens, int64_t cols, std::mt19937& rng) {
  Activations a;
  const int64_t supers = cols / 256;
  a.codes.resize(static_cast<size_t>(n_tokens * cols));
  std::vector<float> x(static_cast<size_t>(cols));
  std::vector<tensor::BlockQ8_K> packed(static_cast<size_t>(supers));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (auto& v : x) v = normal(rng);
    if (t % 3 == 1) x[static_cast<size_t>(t % cols)] = 40.0f;  // an outlier: most codes small
    cpu::quantize_activation_row(DType::Q8_K, x.data(), packed.data(), cols);
    for (int64_t b = 0; b < supers; ++b) {
      const tensor::BlockQ8_K& block = packed[static_cast<size_t>(b)];
      std::memcpy(a.codes.data() + t * cols + 256 * b, block.qs, 256);
      a.d.push_back(block.d);
      for (const int16_t s : block.bsums) a.bsums.push_back(s);
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

// The kernel, block by block, its 4 warps x 32 lanes emulated in gemm_int8_kquant_kernel's order.
template <DType F>
void emulate(const Args& a) {
  const int64_t supers = a.cols / 256;
  auto stage = std::make_unique<Stage>();
  Stage& s = *stage;
  using Scaled = std::array<int, 4>;
  for (int64_t by = 0; by * kTokens < a.n_tokens; ++by) {
    for (int64_t bx = 0; bx * kRows < a.rows; ++bx) {
      const int64_t row0 = bx * kRows, tok0 = by * kTokens;
      std::vector<float> acc(static_cast<size_t>(kWarps * 32 * kMTiles * kNTiles * 4), 0.0f);
      const auto acc_at = [&](int warp, int lane, int mi, int ni) {
        return acc.data() + (((warp * 32 + lane) * kMTiles + mi) * kNTiles + ni) * 4;
      };
      for (int64_t sb = 0; sb < supers; ++sb) {
        std::memset(&s, 0xA5, sizeof s);  // what a step does not stage must not be read
        for (int t = 0; t < kThreads; ++t) {
          stage_weights<F>(a, row0, sb, t, s);
          stage_tokens(a, tok0, sb, t, s);
        }
        for (int warp = 0; warp < kWarps; ++warp) {
          std::vector<Scaled> scaled(static_cast<size_t>(32 * kMTiles * kNTiles), Scaled{});
          const auto scaled_at = [&](int lane, int mi, int ni) {
            return scaled[static_cast<size_t>((lane * kMTiles + mi) * kNTiles + ni)].data();
          };
          for (int k = 0; k < kUnits; ++k) {
            std::array<emulation::IntFragments4, kMTiles> af;
            std::array<emulation::IntFragments2, kNTiles> bf;
            std::array<std::array<std::array<std::array<int, 2>, 2>, 32>, kNTiles> sc;
            for (int lane = 0; lane < 32; ++lane) {
              const auto l = static_cast<size_t>(lane);
              for (int mi = 0; mi < kMTiles; ++mi)
                load_a(s, warp_first_token(warp, mi), k, lane, af[static_cast<size_t>(mi)][l].data());
              for (int ni = 0; ni < kNTiles; ++ni) {
                load_b(s, warp_first_row(warp, ni), k, lane, bf[static_cast<size_t>(ni)][l].data());
                int lane_sc[2][2];
                load_unit_scales(s, warp_first_row(warp, ni), k, lane, lane_sc);
                for (int h = 0; h < 2; ++h)
                  for (int q = 0; q < 2; ++q)
                    sc[static_cast<size_t>(ni)][l][static_cast<size_t>(h)][static_cast<size_t>(q)] = lane_sc[h][q];
              }
            }
            for (int ni = 0; ni < kNTiles; ++ni) {
              for (int mi = 0; mi < kMTiles; ++mi) {
                emulation::IntAccumulators c0{}, c1{};
                const auto& am = af[static_cast<size_t>(mi)];
                const auto& bm = bf[static_cast<size_t>(ni)];
                if constexpr (kScalePer32<F>) {
                  emulation::warp_mma_s8(am, bm, c0);
                } else {
                  emulation::warp_mma_s8_k16(am, bm, 0, c0);
                  emulation::warp_mma_s8_k16(am, bm, 1, c1);
                }
                for (int lane = 0; lane < 32; ++lane) {
                  const auto l = static_cast<size_t>(lane);
                  int lane_sc[2][2];
                  for (int h = 0; h < 2; ++h)
                    for (int q = 0; q < 2; ++q)
                      lane_sc[h][q] = sc[static_cast<size_t>(ni)][l][static_cast<size_t>(h)][static_cast<size_t>(q)];
                  scale_products<F>(lane_sc, c0[l].data(), c1[l].data(), scaled_at(lane, mi, ni));
                }
              }
            }
          }
          emulation::Fragments4 sums_a[kMTiles];
          for (int mi = 0; mi < kMTiles; ++mi)
            for (int lane = 0; lane < 32; ++lane)
              load_bsums(s, warp_first_token(warp, mi), lane, sums_a[mi][static_cast<size_t>(lane)].data());
          for (int ni = 0; ni < kNTiles; ++ni) {
            emulation::Fragments2 mins_b;
            for (int lane = 0; lane < 32; ++lane)
              load_mins(s, warp_first_row(warp, ni), lane, mins_b[static_cast<size_t>(lane)].data());
            for (int mi = 0; mi < kMTiles; ++mi) {
              std::vector<std::array<float, 4>> mins(32, std::array<float, 4>{});
              std::array<float*, 32> mins_at;
              for (size_t l = 0; l < 32; ++l) mins_at[l] = mins[l].data();
              emulation::warp_mma(sums_a[mi], mins_b, mins_at);
              for (int lane = 0; lane < 32; ++lane) {
                add_super_terms<F>(s, warp_first_token(warp, mi), warp_first_row(warp, ni), lane,
                                   scaled_at(lane, mi, ni), mins[static_cast<size_t>(lane)].data(),
                                   acc_at(warp, lane, mi, ni));
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
  const auto w = random_weights(F, shape.rows, shape.cols, rng);
  const Activations x = quantize_tokens(shape.n_tokens, shape.cols, rng);
  const int64_t y_stride = shape.rows + 3;  // a strided output, as the model's views are
  std::vector<float> y(static_cast<size_t>(shape.n_tokens * y_stride), -7.0f);
  Args a;
  a.w = w.data();
  a.row_bytes = *tensor::row_bytes(F, shape.cols);
  a.rows = shape.rows;
  a.cols = shape.cols;
  a.xq = x.codes.data();
  a.xd = x.d.data();
  a.bsums = x.bsums.data();
  a.n_tokens = shape.n_tokens;
  a.y = y.data();
  a.y_stride = y_stride;
  emulate<F>(a);

  // The GEMV's super-block terms (gemv_rows.cuh kquant_row_dot), added in column order.
  const int64_t supers = shape.cols / 256;
  for (int64_t t = 0; t < shape.n_tokens; ++t) {
    for (int64_t r = 0; r < shape.rows; ++r) {
      float want = 0.0f;
      for (int64_t sb = 0; sb < supers; ++sb) {
        const uint8_t* block = w.data() + r * static_cast<int64_t>(a.row_bytes) + sb * hd::kBlockBytes<F>;
        int scaled = 0, mins = 0;
        hd::KUnit u{};
        for (int j = 0; j < 8; ++j) {
          hd::decode_kunit<F>(block, j, u);
          int codes[8];
          std::memcpy(codes, x.codes.data() + t * shape.cols + sb * 256 + 32 * j, 32);
          int unit_scaled = 0, unit_mins = 0;
          hd::kunit_dot(u, codes, x.bsums.data() + t * (shape.cols / 16) + sb * 16 + 2 * j, unit_scaled, unit_mins);
          scaled += unit_scaled;
          mins += unit_mins;
        }
        want = hd::add_rn(want, hd::ksuper_value(u.d, u.dmin, x.d[static_cast<size_t>(t * supers + sb)], scaled, mins));
      }
      const float got = y[static_cast<size_t>(t * y_stride + r)];
      ASSERT_EQ(got, want) << tensor::dtype_name(F) << " " << shape.rows << "x" << shape.cols << " for "
                           << shape.n_tokens << " tokens: token " << t << " row " << r;
    }
    // The stride's gap is left alone.
    for (int64_t r = shape.rows; r < y_stride; ++r) ASSERT_EQ(y[static_cast<size_t>(t * y_stride + r)], -7.0f);
  }
}

TEST(CudaInt8GemmKQuantEmulation, MatchesTheSuperBlockSumsBitForBit) {
  std::mt19937 rng(2026);
  // A whole tile, ragged rows and tokens, one row and one token, several tiles both ways.
  const Shape shapes[] = {{64, 256, 64}, {100, 512, 9}, {1, 256, 1}, {130, 768, 70}};
  for (const Shape& shape : shapes) {
    check<DType::Q2_K>(shape, rng);
    check<DType::Q3_K>(shape, rng);
    check<DType::Q4_K>(shape, rng);
    check<DType::Q5_K>(shape, rng);
    check<DType::Q6_K>(shape, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(CudaInt8GemmKQuantEmulation, SmallIntegersBecomeTheirExactHalf) {
  for (int v = -2048; v <= 2048; ++v) {
    ASSERT_EQ(exact_int_to_half(v), tensor::float_to_fp16(static_cast<float>(v))) << v;
  }
}

TEST(CudaInt8GemmKQuantEmulation, TakesTheStoredKQuantsOnly) {
  for (const DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) EXPECT_TRUE(takes_type(t));
  for (const DType t : {DType::F32, DType::F16, DType::Q4_0, DType::Q8_0, DType::Q8_K})
    EXPECT_FALSE(takes_type(t)) << tensor::dtype_name(t);
}

}  // namespace
}  // namespace lumen::backend::cuda
