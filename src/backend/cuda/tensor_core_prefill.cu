// The tensor-core prefill attention (tensor_core_prefill_math.h has the algorithm and the
// per-lane arithmetic this kernel shares with its CPU test). This file adds what only a GPU does:
// the tile copies into shared memory, the mma.sync products and the quad shuffles.
//
// Shared memory per block (f16 values, rows padded by 8 values = 16 bytes so that the 8 rows a
// fragment load touches start in 8 different bank quadruples):
//   queries [vectors][head_dim + 8], rounded once when the block starts;
//   keys    [keys][head_dim + 8]: a tile's K rows as the cache holds them (B column by column
//           for S = Q K^T);
//   values  [head_dim][keys + 8]: the tile's V rows transposed (B column by column for P V).
// A tile's rows come from the cache 16 bytes a load, through the sequence's block table; keys
// outside the task's range are zeros (never NaN: a masked key's probability is 0, and 0 x NaN is
// NaN). The 16-byte loads need 16-byte aligned rows and head slices, which
// tensor_core_prefill_refusal checks.
#include <cmath>

#include "backend/cuda/attention_sinks.h"
#include "backend/cuda/hd_math.h"
#include "backend/cuda/kv_codec.h"
#include "backend/cuda/mma_fragments.h"
#include "backend/cuda/mma_sync.cuh"
#include "backend/cuda/tensor_core_prefill.h"

namespace lumen::backend::cuda {

namespace {

using mma::mma_f16;

constexpr int kThreads = 32 * kPrefillWarps;

// Reductions over the 4 lanes of a quad (lanes 4g .. 4g + 3 hold the same two rows).
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

// The cache row of position `key` of the task's sequence (without block tables: the batch row).
__device__ __forceinline__ int64_t cache_row(const TensorCorePrefillParams& p, const AttentionSeq& seq, int64_t key) {
  if (p.block_tables == nullptr) return seq.first_token + key;
  return static_cast<int64_t>(p.block_tables[seq.table_offset + key / p.block_size]) * p.block_size +
         key % p.block_size;
}

// Three blocks per SM: up to 168 registers a thread, which the scores and output held in
// registers need (156-166 on sm_90, no spills; four blocks, 128 registers, spilled 40-184 bytes).
template <int D, int KEYS, int SPLIT>
__global__ void __launch_bounds__(kThreads, 3) tensor_core_prefill_kernel(TensorCorePrefillParams p) {
  constexpr PrefillTile kTile{D, KEYS, SPLIT};
  constexpr int kVectors = kTile.vectors();
  constexpr int kDims = kTile.dims_per_warp();
  constexpr int kRowStride = D + 8;       // queries and keys
  constexpr int kValueStride = KEYS + 8;  // transposed values
  constexpr int kChunks = D / 8;          // 16-byte pieces of a head's row
  extern __shared__ uint4 tc_prefill_shared[];
  uint16_t* q_s = reinterpret_cast<uint16_t*>(tc_prefill_shared);
  uint16_t* k_s = q_s + kVectors * kRowStride;
  uint16_t* v_s = k_s + KEYS * kRowStride;

  const PrefillTask task = p.tasks[blockIdx.x];
  const AttentionSeq seq = p.seqs[task.seq];
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t n_vectors = seq.n_tokens * group;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int row_group = warp / SPLIT, dim_part = warp % SPLIT;

  // Queries, rounded to f16 (as every kernel rounds them for an f16 K); padding vectors are 0.
  for (int i = static_cast<int>(threadIdx.x); i < kVectors * D / 2; i += kThreads) {
    const int v = i / (D / 2), d = 2 * (i % (D / 2));
    const int64_t vector = task.vector_begin + v;
    uint32_t pair = 0;
    if (vector < n_vectors && d < p.dims) {
      const int64_t token = seq.first_token + vector / group;
      const int64_t head = task.kv_head * group + vector % group;
      const float* q = p.q + token * p.q_token_stride + head * p.q_head_stride + d;
      pair = mma::pack(hd::float_to_half(q[0]), d + 1 < p.dims ? hd::float_to_half(q[1]) : uint16_t{0});
    }
    *reinterpret_cast<uint32_t*>(q_s + v * kRowStride + d) = pair;
  }

  // The keys the task reads: from its first row's first key to its last row's last.
  const int64_t last_vector = min(n_vectors, static_cast<int64_t>(task.vector_begin) + kVectors) - 1;
  const PrefillTaskKeys keys{
      prefill_task_row(p.bidirectional, seq.n_tokens, seq.start_pos + task.vector_begin / group, p.window),
      prefill_task_row(p.bidirectional, seq.n_tokens, seq.start_pos + last_vector / group, p.window)};
  const int64_t range_lo = keys.lo(), range_hi = keys.hi();

  // This lane's rows g and g + 8 of its warp's 16 (a padding vector takes the task's last row).
  PrefillRow rows[2];
  for (int r = 0; r < 2; ++r) {
    const int64_t vector =
        min(static_cast<int64_t>(task.vector_begin) + row_group * mma::kM + lane / 4 + 8 * r, last_vector);
    rows[r] = prefill_task_row(p.bidirectional, seq.n_tokens, seq.start_pos + vector / group, p.window);
  }

  PrefillLane<KEYS, kDims> st;
  prefill_start(st);
  const auto* k_cache = static_cast<const uint8_t*>(p.k);
  const auto* v_cache = static_cast<const uint8_t*>(p.v);
  const int64_t head_bytes = task.kv_head * D * 2;
  const uint16_t* q_rows = q_s + row_group * mma::kM * kRowStride;

  for (int64_t t0 = range_lo - range_lo % KEYS; t0 <= range_hi; t0 += KEYS) {
    __syncthreads();  // the previous tile (and, the first time, the queries) fully read
    for (int i = static_cast<int>(threadIdx.x); i < KEYS * kChunks; i += kThreads) {
      const int key_index = i / kChunks, chunk = i % kChunks;  // consecutive threads: one row
      const int64_t key = t0 + key_index;
      uint4 piece = make_uint4(0, 0, 0, 0);
      if (key >= range_lo && key <= range_hi) {
        piece =
            *reinterpret_cast<const uint4*>(k_cache + cache_row(p, seq, key) * p.k_row_bytes + head_bytes + chunk * 16);
      }
      *reinterpret_cast<uint4*>(k_s + key_index * kRowStride + chunk * 8) = piece;
    }
    for (int i = static_cast<int>(threadIdx.x); i < KEYS * kChunks; i += kThreads) {
      const int key_index = i % KEYS, chunk = i / KEYS;  // consecutive threads: one column
      const int64_t key = t0 + key_index;
      uint4 piece = make_uint4(0, 0, 0, 0);
      if (key >= range_lo && key <= range_hi) {
        piece =
            *reinterpret_cast<const uint4*>(v_cache + cache_row(p, seq, key) * p.v_row_bytes + head_bytes + chunk * 16);
      }
      uint16_t* column = v_s + chunk * 8 * kValueStride + key_index;
      const uint32_t words[4] = {piece.x, piece.y, piece.z, piece.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        column[(2 * w) * kValueStride] = static_cast<uint16_t>(words[w] & 0xffffu);
        column[(2 * w + 1) * kValueStride] = static_cast<uint16_t>(words[w] >> 16);
      }
    }
    __syncthreads();

    // 1. S = Q K^T
#pragma unroll
    for (int j = 0; j < PrefillLane<KEYS, kDims>::kScoreTiles; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) st.s[j][i] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < D / mma::kK; ++kk) {
      uint32_t a[4];
      mma::load_a(q_rows + kk * mma::kK, kRowStride, lane, a);
#pragma unroll
      for (int j = 0; j < PrefillLane<KEYS, kDims>::kScoreTiles; ++j) {
        uint32_t b[2];
        mma::load_b(k_s + j * mma::kN * kRowStride + kk * mma::kK, kRowStride, lane, b);
        mma_f16(st.s[j], a, b);
      }
    }
    // 2-3. scale, cap, mask; the rows' max over the tile; the running softmax
    prefill_scores(st, lane, t0, rows, keys.all_visible(t0, KEYS), p.score);
    float tile_max[2];
    prefill_lane_max(st, tile_max);
    tile_max[0] = quad_max(tile_max[0]);
    tile_max[1] = quad_max(tile_max[1]);
    prefill_softmax_step(st, tile_max);
    // 4. O += P V over this warp's output dims
#pragma unroll
    for (int kk = 0; kk < KEYS / mma::kK; ++kk) {
      uint32_t a[4];
      prefill_probabilities(st, kk, a);
#pragma unroll
      for (int j = 0; j < PrefillLane<KEYS, kDims>::kOutTiles; ++j) {
        uint32_t b[2];
        mma::load_b(v_s + (dim_part * kDims + j * mma::kN) * kValueStride + kk * mma::kK, kValueStride, lane, b);
        mma_f16(st.o[j], a, b);
      }
    }
  }

  // Rows g and g + 8's divisors: their quad's sum, with their heads' sinks (none: the sum alone).
  // The head in 32 bits (a sequence's vectors and a group are far from 2^31): with a 64-bit
  // remainder one kernel met its bound of 168 registers (sm_90: at most 167 so, 166 without sinks).
  float divisors[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int vector = task.vector_begin + row_group * mma::kM + lane / 4 + 8 * r;
    const int head = task.kv_head * static_cast<int>(group) + vector % static_cast<int>(group);
    divisors[r] = prefill_divisor(st.m[r], quad_sum(st.l[r]), sink_logit(p.sinks, head));
  }
#pragma unroll
  for (int j = 0; j < PrefillLane<KEYS, kDims>::kOutTiles; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const mma::Coord c = mma::c_coord(lane, i);
      const int64_t vector = static_cast<int64_t>(task.vector_begin) + row_group * mma::kM + c.row;
      if (vector >= n_vectors) continue;
      const int64_t token = seq.first_token + vector / group;
      const int64_t head = task.kv_head * group + vector % group;
      const int64_t d = dim_part * kDims + j * mma::kN + c.col;
      if (d >= p.dims) continue;  // a padded head's zeros
      p.out[token * p.out_token_stride + head * p.out_head_stride + d] = prefill_output(st.o[j][i], divisors[i >> 1]);
    }
  }
}

template <int D>
void launch_for(const TensorCorePrefillParams& params, int64_t n_tasks, cudaStream_t stream) {
  constexpr PrefillTile kTile = prefill_tile(D);
  const auto kernel = tensor_core_prefill_kernel<D, kTile.keys, kTile.dim_split>;
  constexpr size_t kShared =
      sizeof(uint16_t) * (static_cast<size_t>(kTile.vectors() + kTile.keys) * (D + 8) + D * (kTile.keys + 8));
  if (kShared > 48 * 1024) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kShared));
  }
  kernel<<<static_cast<unsigned>(n_tasks), kThreads, kShared, stream>>>(params);
}

}  // namespace

void launch_tensor_core_prefill(const TensorCorePrefillParams& params, int64_t n_tasks, cudaStream_t stream) {
  if (n_tasks == 0) return;
  switch (params.head_dim) {
    case 64: return launch_for<64>(params, n_tasks, stream);
    case 80: return launch_for<80>(params, n_tasks, stream);
    case 128: return launch_for<128>(params, n_tasks, stream);
    case 256: return launch_for<256>(params, n_tasks, stream);
    default: return;  // tensor_core_prefill_refusal turned the call away
  }
}

}  // namespace lumen::backend::cuda
