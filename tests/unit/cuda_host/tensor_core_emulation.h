#pragma once
// The tensor-core prefill kernel (tensor_core_prefill.cu) emulated on a CPU, for the tests of
// its causal prefill (tensor_core_prefill_test.cc) and of an encoder's calls
// (tensor_core_encoder_test.cc).
//
// The emulation runs the kernel's own per-lane functions (prefill_scores, prefill_softmax_step,
// prefill_probabilities, prefill_divisor, prefill_output), fragment loads (mma::load_a / load_b) and shared-memory
// layout; only what is the hardware's is spelled here: the product of a warp's fragments
// (rebuilt into matrices with the documented coordinates of mma_fragments.h), the quad
// shuffles, and the tile copies (the same indexing as the kernel's loops). A GPU run checks the
// kernel itself (tests/unit/backend_cuda).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cuda/attention_sinks.h"
#include "backend/cuda/mma_fragments.h"
#include "backend/cuda/tensor_core_prefill_math.h"
#include "backend/cuda/tensor_core_prefill_plan.h"
#include "tensor/fp16.h"

namespace lumen::backend::cuda::emulation {

using Fragments4 = std::array<std::array<uint32_t, 4>, 32>;
using Fragments2 = std::array<std::array<uint32_t, 2>, 32>;

inline float low_half(uint32_t r) { return tensor::fp16_to_float(static_cast<uint16_t>(r & 0xffffu)); }
inline float high_half(uint32_t r) { return tensor::fp16_to_float(static_cast<uint16_t>(r >> 16)); }

// D = A B + C for one warp's fragments, the matrices rebuilt from the documented coordinates;
// c[lane] points at the lane's 4 accumulators.
inline void warp_mma(const Fragments4& a, const Fragments2& b, std::array<float*, 32> c) {
  float am[16][16], bm[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const mma::Coord x = mma::a_coord(lane, i);
      const uint32_t r = a[static_cast<size_t>(lane)][static_cast<size_t>(i / 2)];
      am[x.row][x.col] = i % 2 == 0 ? low_half(r) : high_half(r);
    }
    for (int i = 0; i < 4; ++i) {
      const mma::Coord x = mma::b_coord(lane, i);
      const uint32_t r = b[static_cast<size_t>(lane)][static_cast<size_t>(i / 2)];
      bm[x.row][x.col] = i % 2 == 0 ? low_half(r) : high_half(r);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      const mma::Coord x = mma::c_coord(lane, i);
      float sum = 0.0f;
      for (int k = 0; k < 16; ++k) sum += am[x.row][k] * bm[k][x.col];
      c[static_cast<size_t>(lane)][i] += sum;
    }
  }
}

// One launch of the kernel (TensorCorePrefillParams, spelled for the host).
struct EmulatedCall {
  PrefillPlan plan;
  const float* q = nullptr;
  int64_t q_head_stride = 0, q_token_stride = 0;
  float* out = nullptr;
  int64_t out_head_stride = 0, out_token_stride = 0;
  int64_t dims = 0;  // the heads' values; the tile's D past them are zeros
  int64_t n_heads = 0, group = 1, window = 0;
  bool bidirectional = false;
  const float* sinks = nullptr;  // n_heads logits (AttentionConfig::sinks), or none
  PrefillScore score;
  const uint16_t* k = nullptr;  // f16 rows of row_values values
  const uint16_t* v = nullptr;
  size_t row_values = 0;
  int64_t block_size = 16;  // with the plan's block tables; without any, key j is row first_token + j
};

// The kernel, block by block, each block's 4 warps x 32 lanes emulated (tensor_core_prefill.cu's
// steps in its order).
template <int D>
void emulate_kernel(const EmulatedCall& call) {
  constexpr PrefillTile kTile = prefill_tile(D);
  constexpr int KEYS = kTile.keys, kVectors = kTile.vectors(), kDims = kTile.dims_per_warp();
  constexpr int kRowStride = D + 8, kValueStride = KEYS + 8;
  using Lane = PrefillLane<KEYS, kDims>;
  const PrefillPlan& plan = call.plan;
  const int64_t group = call.group;
  std::vector<uint16_t> q_s(static_cast<size_t>(kVectors * kRowStride)), k_s(static_cast<size_t>(KEYS * kRowStride)),
      v_s(static_cast<size_t>(D * kValueStride));
  for (const PrefillTask& task : plan.tasks) {
    const AttentionSeq& seq = plan.seqs[static_cast<size_t>(task.seq)];
    const int64_t n_vectors = seq.n_tokens * group;
    for (int v = 0; v < kVectors; ++v) {
      for (int d = 0; d < D; ++d) {
        const int64_t vector = task.vector_begin + v;
        uint16_t value = 0;
        if (vector < n_vectors && d < call.dims) {
          const int64_t token = seq.first_token + vector / group, head = task.kv_head * group + vector % group;
          value = tensor::float_to_fp16(call.q[token * call.q_token_stride + head * call.q_head_stride + d]);
        }
        q_s[static_cast<size_t>(v * kRowStride + d)] = value;
      }
    }
    const int64_t last_vector = std::min<int64_t>(n_vectors, task.vector_begin + kVectors) - 1;
    const PrefillTaskKeys keys{
        prefill_task_row(call.bidirectional, seq.n_tokens, seq.start_pos + task.vector_begin / group, call.window),
        prefill_task_row(call.bidirectional, seq.n_tokens, seq.start_pos + last_vector / group, call.window)};
    const int64_t range_lo = keys.lo(), range_hi = keys.hi();
    std::vector<Lane> lanes(4 * 32);
    std::vector<std::array<PrefillRow, 2>> rows(4 * 32);
    for (int warp = 0; warp < 4; ++warp) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int r = 0; r < 2; ++r) {
          const int64_t vector =
              std::min<int64_t>(task.vector_begin + (warp / kTile.dim_split) * 16 + lane / 4 + 8 * r, last_vector);
          rows[static_cast<size_t>(warp * 32 + lane)][static_cast<size_t>(r)] =
              prefill_task_row(call.bidirectional, seq.n_tokens, seq.start_pos + vector / group, call.window);
        }
        prefill_start(lanes[static_cast<size_t>(warp * 32 + lane)]);
      }
    }
    const auto cache_row = [&](int64_t key) {
      if (plan.block_tables.empty()) return static_cast<size_t>(seq.first_token + key);
      return static_cast<size_t>(plan.block_tables[static_cast<size_t>(seq.table_offset + key / call.block_size)] *
                                     call.block_size +
                                 key % call.block_size);
    };
    for (int64_t t0 = range_lo - range_lo % KEYS; t0 <= range_hi; t0 += KEYS) {
      for (int key_index = 0; key_index < KEYS; ++key_index) {
        const int64_t key = t0 + key_index;
        const bool in_range = key >= range_lo && key <= range_hi;
        for (int d = 0; d < D; ++d) {
          const size_t at = in_range ? cache_row(key) * call.row_values + static_cast<size_t>(task.kv_head * D + d) : 0;
          k_s[static_cast<size_t>(key_index * kRowStride + d)] = in_range ? call.k[at] : 0;
          v_s[static_cast<size_t>(d * kValueStride + key_index)] = in_range ? call.v[at] : 0;
        }
      }
      const bool all_visible = keys.all_visible(t0, KEYS);
      for (int warp = 0; warp < 4; ++warp) {
        Lane* st = &lanes[static_cast<size_t>(warp * 32)];
        const int row_group = warp / kTile.dim_split, dim_part = warp % kTile.dim_split;
        const uint16_t* q_rows = q_s.data() + row_group * 16 * kRowStride;
        for (int lane = 0; lane < 32; ++lane)
          for (auto& tile : st[lane].s) std::fill(std::begin(tile), std::end(tile), 0.0f);
        for (int kk = 0; kk < D / 16; ++kk) {
          Fragments4 a;
          for (int lane = 0; lane < 32; ++lane)
            mma::load_a(q_rows + kk * 16, kRowStride, lane, a[static_cast<size_t>(lane)].data());
          for (int j = 0; j < Lane::kScoreTiles; ++j) {
            Fragments2 b;
            std::array<float*, 32> acc;
            for (int lane = 0; lane < 32; ++lane) {
              mma::load_b(k_s.data() + j * 8 * kRowStride + kk * 16, kRowStride, lane,
                          b[static_cast<size_t>(lane)].data());
              acc[static_cast<size_t>(lane)] = st[lane].s[j];
            }
            warp_mma(a, b, acc);
          }
        }
        std::array<std::array<float, 2>, 32> lane_max;
        for (int lane = 0; lane < 32; ++lane) {
          prefill_scores(st[lane], lane, t0, rows[static_cast<size_t>(warp * 32 + lane)].data(), all_visible,
                         call.score);
          prefill_lane_max(st[lane], lane_max[static_cast<size_t>(lane)].data());
        }
        for (int lane = 0; lane < 32; ++lane) {  // the quad's max (its 4 lanes hold the same rows)
          float tile_max[2];
          for (int r = 0; r < 2; ++r) {
            tile_max[r] = -INFINITY;
            for (int other = lane & ~3; other < (lane & ~3) + 4; ++other)
              tile_max[r] = std::max(tile_max[r], lane_max[static_cast<size_t>(other)][static_cast<size_t>(r)]);
          }
          prefill_softmax_step(st[lane], tile_max);
        }
        for (int kk = 0; kk < KEYS / 16; ++kk) {
          Fragments4 a;
          for (int lane = 0; lane < 32; ++lane)
            prefill_probabilities(st[lane], kk, a[static_cast<size_t>(lane)].data());
          for (int j = 0; j < Lane::kOutTiles; ++j) {
            Fragments2 b;
            std::array<float*, 32> acc;
            for (int lane = 0; lane < 32; ++lane) {
              mma::load_b(v_s.data() + (dim_part * kDims + j * 8) * kValueStride + kk * 16, kValueStride, lane,
                          b[static_cast<size_t>(lane)].data());
              acc[static_cast<size_t>(lane)] = st[lane].o[j];
            }
            warp_mma(a, b, acc);
          }
        }
      }
    }
    for (int warp = 0; warp < 4; ++warp) {
      const int row_group = warp / kTile.dim_split, dim_part = warp % kTile.dim_split;
      for (int lane = 0; lane < 32; ++lane) {
        float sums[2] = {0.0f, 0.0f};
        for (int other = lane & ~3; other < (lane & ~3) + 4; ++other)
          for (int r = 0; r < 2; ++r) sums[r] += lanes[static_cast<size_t>(warp * 32 + other)].l[r];
        const Lane& st = lanes[static_cast<size_t>(warp * 32 + lane)];
        for (int j = 0; j < Lane::kOutTiles; ++j) {
          for (int i = 0; i < 4; ++i) {
            const mma::Coord cc = mma::c_coord(lane, i);
            const int64_t vector = task.vector_begin + row_group * 16 + cc.row;
            if (vector >= n_vectors) continue;
            const int64_t token = seq.first_token + vector / group, head = task.kv_head * group + vector % group;
            const int64_t d = dim_part * kDims + j * 8 + cc.col;
            if (d >= call.dims) continue;
            const float divisor = prefill_divisor(st.m[i >> 1], sums[i >> 1], sink_logit(call.sinks, head));
            call.out[token * call.out_token_stride + head * call.out_head_stride + d] =
                prefill_output(st.o[j][i], divisor);
          }
        }
      }
    }
  }
}

// The largest difference from `expected` over its largest magnitude (infinite for a non-finite value).
inline double max_relative_difference(const std::vector<float>& expected, const std::vector<float>& got) {
  double scale = 0.0, worst = 0.0;
  for (float x : expected) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(static_cast<double>(expected[i]) - static_cast<double>(got[i])));
  }
  return worst / scale;
}

}  // namespace lumen::backend::cuda::emulation
