// Paged attention kernels (see attention_kernels.h for the task structure and the modes).
//
// A task is one thread block of 4 warps. Each warp owns up to 2 of the item's query vectors:
// its running max, sum and (lane-strided) accumulator live in registers. The block walks the
// task's keys in tiles of 32 aligned to absolute positions: all threads copy the tile's keys
// (and values) of the item's KV head from the cache into shared memory as f32, through the
// sequence's block table; then for each vector, lane j scores key j (a sequential dot product
// over head_dim, keys padded by one float per row so the 32 lanes hit 32 banks), the warp
// updates its softmax state, and the probabilities are broadcast by shuffles into the
// accumulator (lane i owns dims i, i + 32, ...).
//
// Expected cost: decode reads each K/V row of the split once per item (all heads of a GQA
// group share the tile), so it streams the cache at close to bandwidth when there are enough
// splits x KV heads x sequences to fill the GPU; prefill re-reads each tile once per item of 8
// query vectors, and the per-lane dot products make it shared-memory bound (a simple kernel,
// not a tensor-core flash attention).
#include <cmath>

#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/kv_codec.h"
#include "backend/cuda/q8_block_quantize.cuh"

namespace lumen::backend::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kVectorsPerWarp = kItemVectors / kWarps;
constexpr int kThreadsPerKey = kThreads / kTileKeys;
static_assert(kTileKeys == 32, "one key per lane");
static_assert(kThreads % kTileKeys == 0, "whole threads per key in the tile loads");
static_assert(kSplitKeys % kTileKeys == 0, "tiles never straddle splits");

// A V tile only where values are accumulated from their own rows (not Stats; not a latent cache,
// whose values are read from the K tile).
__host__ __device__ inline bool has_v_tile(AttentionMode mode, bool values_in_keys) {
  return mode != AttentionMode::Stats && !values_in_keys;
}

size_t task_shared_bytes(AttentionMode mode, int64_t dim, bool values_in_keys) {
  const int64_t floats =
      kTileKeys * (dim + 1) + (has_v_tile(mode, values_in_keys) ? kTileKeys * dim : 0) + kItemVectors * dim;
  return static_cast<size_t>(floats) * sizeof(float);
}

// Element `element` of cache row `row`, widened to f32 as the CPU backend widens it (kv_codec.h).
template <tensor::DType T>
__device__ __forceinline__ float load_cache(const void* base, size_t row_bytes, int64_t row, int64_t element) {
  return hd::kv_element<T>(static_cast<const uint8_t*>(base) + row * row_bytes, element);
}

// acc[i] += sum_j p_j * v_rows[j * row_stride + lane + 32 i] over the tile's value_dim values,
// p_j being lane j's probability.
template <int DPL>
__device__ __forceinline__ void accumulate_values(float prob, const float* v_rows, int64_t row_stride,
                                                  int64_t value_dim, float* acc) {
  const int lane = threadIdx.x % 32;
  for (int j = 0; j < kTileKeys; ++j) {
    const float pj = __shfl_sync(0xffffffffu, prob, j);
    if (pj == 0.0f) continue;  // masked key (the same for the whole warp)
    const float* row = v_rows + j * row_stride;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int64_t d = lane + 32 * i;
      if (d < value_dim) acc[i] = fmaf(pj, row[d], acc[i]);
    }
  }
}

// Row `row` of the sequence's slice: its position in the sequence (a token tree's node: its
// depth past the last token, SequenceSlice::positions), else its cache position.
__device__ __forceinline__ int64_t row_position(const AttentionParams& p, const AttentionSeq& seq, int64_t row) {
  return seq.positions_offset >= 0 ? static_cast<int64_t>(p.positions[seq.positions_offset + row])
                                   : seq.start_pos + row;
}

// The last cache position row `row` of the slice sees: its own (causal), or further for a row of
// a span that attends both ways (SequenceSlice::key_ends).
__device__ __forceinline__ int64_t row_last_key(const AttentionParams& p, const AttentionSeq& seq, int64_t row) {
  return seq.key_ends_offset >= 0 ? static_cast<int64_t>(p.key_ends[seq.key_ends_offset + row]) - 1
                                  : seq.start_pos + row;
}

// This block's task and item: from the explicit plan, or derived (decode_attention.h) from block
// (item, split offset), the item's sequence position read from device memory. False for a
// decode block past its item's last split (the whole block returns).
__device__ __forceinline__ bool load_task(const AttentionParams& p, AttentionTask& task, AttentionItem& item) {
  if (p.decode.n_seqs == 0) {
    task = p.tasks[blockIdx.x];
    item = p.items[task.item];
    return true;
  }
  const int64_t index = blockIdx.x;
  const int64_t position = p.seqs[index / decode_items_per_seq(p.decode)].start_pos;
  item = decode_item(p.decode, index, position, p.window);
  if (static_cast<int32_t>(blockIdx.y) >= item.n_splits) return false;
  task.item = static_cast<int32_t>(index);
  task.split = item.first_split + static_cast<int32_t>(blockIdx.y);
  return true;
}

__device__ __forceinline__ AttentionItem load_item(const AttentionParams& p) {
  if (p.decode.n_seqs == 0) return p.items[blockIdx.x];
  const int64_t index = blockIdx.x;
  return decode_item(p.decode, index, p.seqs[index / decode_items_per_seq(p.decode)].start_pos, p.window);
}

#include "backend/cuda/attention_combine.cuh"

// kFusedCombine: the kernel also merges each item's splits (combine_if_last), in kernels of their
// own, so the plain ones keep their registers (the merge's loop inlined took a head_dim-128 Flash
// kernel from 96 registers a thread to 120 on sm_90).
template <int DPL, AttentionMode MODE, tensor::DType T, bool kFusedCombine = false>
__global__ void __launch_bounds__(kThreads) attention_task_kernel(AttentionParams p) {
  static_assert(!kFusedCombine || (MODE == AttentionMode::Flash && fused_combine_dims(DPL)));
  extern __shared__ float shared[];
  const int64_t dim = p.head_dim, value_dim = p.value_dim;
  const bool v_from_keys = p.values_in_keys;
  float* k_tile = shared;                          // [kTileKeys][dim + 1]
  float* v_tile = k_tile + kTileKeys * (dim + 1);  // [kTileKeys][dim], only with has_v_tile
  float* q_vecs = v_tile + (has_v_tile(MODE, v_from_keys) ? kTileKeys * dim : 0);  // [8][dim]
  // Where the values are: their own tile, or the leading value_dim of each key row.
  const float* v_rows = v_from_keys ? k_tile : v_tile;
  const int64_t v_row_stride = v_from_keys ? dim + 1 : dim;

  // A dependent launch (dependent_launch.cuh): the plan, the cache and the queries may be the
  // kernels' ahead.
  dependents_may_launch();
  wait_for_prerequisites();
  AttentionTask task;
  AttentionItem item;
  if (!load_task(p, task, item)) return;  // uniform over the block, before any barrier
  const AttentionSeq seq = p.seqs[item.seq];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_vec = item.n_q * item.n_heads;
  const bool capped = p.softcap != 0.0f;
  const float score_scale = capped ? __fdiv_rn(p.scale, p.softcap) : p.scale;

  // Queries, rounded to f16 when they meet an f16 K (as the CPU and ggml do); the other types
  // meet them in f32, as the CPU's widened rows do.
  for (int64_t i = threadIdx.x; i < n_vec * dim; i += kThreads) {
    const int64_t v = i / dim, d = i % dim;
    const int64_t token = seq.first_token + item.q_begin + v / item.n_heads;
    const int64_t head = item.head_begin + v % item.n_heads;
    const float x = p.q[(token * p.n_heads + head) * p.q_stride + d];
    q_vecs[i] = T == tensor::DType::F16 ? round_to_half(x) : x;
  }

  const int64_t split_lo = static_cast<int64_t>(task.split) * kSplitKeys;
  const int64_t split_hi = split_lo + kSplitKeys - 1;
  float m[kVectorsPerWarp], l[kVectorsPerWarp], M[kVectorsPerWarp], inv[kVectorsPerWarp];
  double ld[kVectorsPerWarp];
  bool seen[kVectorsPerWarp];
  // Per vector: the last key its row sees (its cache position, or its span's end), its row's
  // position in the sequence (a tree node's is earlier; the window and ALiBi count from it), the
  // first key the window shows and its head's ALiBi slope (0: none).
  int64_t pos[kVectorsPerWarp], row_pos[kVectorsPerWarp], lo[kVectorsPerWarp];
  float slope[kVectorsPerWarp];
  float acc[kVectorsPerWarp][DPL];
#pragma unroll
  for (int s = 0; s < kVectorsPerWarp; ++s) {
    const int v = warp + kWarps * s;
    const int64_t row = item.q_begin + (v < n_vec ? v / item.n_heads : 0);
    pos[s] = row_last_key(p, seq, row);
    row_pos[s] = row_position(p, seq, row);
    slope[s] = p.alibi && v < n_vec ? p.alibi_slopes[item.head_begin + v % item.n_heads] : 0.0f;
    lo[s] = p.window > 0 ? max(int64_t{0}, row_pos[s] - p.window + 1) : 0;
    m[s] = -INFINITY;
    l[s] = 0.0f;
    ld[s] = 0.0;
    seen[s] = false;
    M[s] = 0.0f;
    inv[s] = 0.0f;
    if (MODE == AttentionMode::ExactPv && v < n_vec) {
      const float2 stats = p.vector_stats[item.stats_base + v];
      M[s] = stats.x;
      inv[s] = stats.y;
    }
#pragma unroll
    for (int i = 0; i < DPL; ++i) acc[s][i] = 0.0f;
  }

  // The keys this task reads: its split, from the lowest key any of its queries sees to the
  // last key any of them sees (its last query's position, or further in a span).
  int64_t item_hi = seq.start_pos + item.q_begin + item.n_q - 1;
  if (seq.key_ends_offset >= 0) {
    for (int r = 0; r < item.n_q; ++r) item_hi = max(item_hi, row_last_key(p, seq, item.q_begin + r));
  }
  int64_t item_lo = 0;
  if (p.window > 0) {
    item_lo = item_hi;
    for (int r = 0; r < item.n_q; ++r) {
      item_lo = min(item_lo, max(int64_t{0}, row_position(p, seq, item.q_begin + r) - p.window + 1));
    }
  }
  const int64_t range_lo = max(item_lo, split_lo), range_hi = min(item_hi, split_hi);
  const int64_t head_offset = static_cast<int64_t>(item.kv_head) * dim;
  __syncthreads();

  // Tile loads: kThreadsPerKey threads per key. Each looks its key's cache row up once, then
  // copies every kThreadsPerKey-th element of the row's head slice: independent loads with no
  // 64-bit division per element. (Loading element by element over the whole tile, each load
  // behind its own block-table read and divisions, made decode attention latency-bound: 48 us
  // a launch at 100 keys on an H200, 43% of a 1B model's decode step.)
  const int tile_key = threadIdx.x / kThreadsPerKey;
  const int key_part = threadIdx.x % kThreadsPerKey;
  const int dim32 = static_cast<int>(dim);
  for (int64_t t0 = range_lo - range_lo % kTileKeys; t0 <= range_hi; t0 += kTileKeys) {
    {
      const int64_t key = t0 + tile_key;
      float* k_dst = k_tile + tile_key * (dim + 1);
      float* v_dst = v_tile + tile_key * dim;
      if (key >= range_lo && key <= range_hi) {
        const int64_t row =
            static_cast<int64_t>(p.block_tables[seq.table_offset + key / p.block_size]) *
                p.block_size +
            key % p.block_size;
#pragma unroll 4
        for (int d = key_part; d < dim32; d += kThreadsPerKey) {
          k_dst[d] = load_cache<T>(p.k, p.k_row_bytes, row, head_offset + d);
          if constexpr (MODE != AttentionMode::Stats) {
            if (!v_from_keys) v_dst[d] = load_cache<T>(p.v, p.v_row_bytes, row, head_offset + d);
          }
        }
      } else {
        for (int d = key_part; d < dim32; d += kThreadsPerKey) {
          k_dst[d] = 0.0f;
          if constexpr (MODE != AttentionMode::Stats) {
            if (!v_from_keys) v_dst[d] = 0.0f;
          }
        }
      }
    }
    __syncthreads();

#pragma unroll
    for (int s = 0; s < kVectorsPerWarp; ++s) {
      const int v = warp + kWarps * s;
      if (v >= n_vec) continue;  // warp-uniform
      // Keys of this tile the vector sees: causal, window, and inside this task's split.
      const int64_t vis_lo = max(lo[s], max(split_lo, t0));
      const int64_t vis_hi = min(pos[s], min(split_hi, t0 + kTileKeys - 1));
      if (vis_lo > vis_hi) continue;  // warp-uniform: none
      const int64_t key = t0 + lane;
      bool visible = key >= vis_lo && key <= vis_hi;
      if (seq.mask_offset >= 0) {  // a token tree: off the row's branch, or out of its window
        if (visible && key >= seq.start_pos) {
          const int64_t row = item.q_begin + v / item.n_heads, k = key - seq.start_pos;
          visible = p.masks[seq.mask_offset + row * seq.n_tokens + k] != 0 &&
                    !(p.window > 0 && row_pos[s] - row_position(p, seq, k) >= p.window);
        }
        if (!__any_sync(0xffffffffu, visible)) continue;  // warp-uniform: the tree hides them all
      }
      float score = -INFINITY;
      if (visible) {
        const float* qv = q_vecs + v * dim;
        const float* kr = k_tile + lane * (dim + 1);
        float dot = 0.0f;
        for (int d = 0; d < dim32; ++d) dot = fmaf(qv[d], kr[d], dot);
        score = capped ? __fmul_rn(p.softcap, tanhf(__fmul_rn(dot, score_scale)))
                       : __fmul_rn(dot, score_scale);
        if (slope[s] != 0.0f) {  // after the scale and the cap, as ggml's soft_max adds it
          const int64_t key_pos = key < seq.start_pos ? key : row_position(p, seq, key - seq.start_pos);
          const int64_t distance = row_pos[s] > key_pos ? row_pos[s] - key_pos : key_pos - row_pos[s];
          score = __fadd_rn(score, __fmul_rn(slope[s], -static_cast<float>(distance)));
        }
      }
      seen[s] = true;
      if constexpr (MODE == AttentionMode::ExactPv) {
        const float prob =
            visible ? round_to_half(__fmul_rn(expf(__fsub_rn(score, M[s])), inv[s])) : 0.0f;
        accumulate_values<DPL>(prob, v_rows, v_row_stride, value_dim, acc[s]);
      } else {
        const float m_new = fmaxf(m[s], warp_max(score));
        const float correction = expf(__fsub_rn(m[s], m_new));  // 0 on the first tile
        const float prob = visible ? expf(__fsub_rn(score, m_new)) : 0.0f;
        if constexpr (MODE == AttentionMode::Stats) {
          ld[s] = ld[s] * static_cast<double>(correction) + warp_sum(static_cast<double>(prob));
        } else {
          l[s] = __fadd_rn(__fmul_rn(l[s], correction), warp_sum(prob));
#pragma unroll
          for (int i = 0; i < DPL; ++i) acc[s][i] = __fmul_rn(acc[s][i], correction);
          accumulate_values<DPL>(prob, v_rows, v_row_stride, value_dim, acc[s]);
        }
        m[s] = m_new;
      }
    }
    __syncthreads();  // before the next tile overwrites the shared rows
  }

#pragma unroll
  for (int s = 0; s < kVectorsPerWarp; ++s) {
    const int v = warp + kWarps * s;
    if (v >= n_vec) continue;
    const int64_t slot =
        item.partial_base + static_cast<int64_t>(task.split - item.first_split) * n_vec + v;
    if (lane == 0) {
      PartialStats stats;
      stats.max = m[s];
      stats.sum = MODE == AttentionMode::Stats ? ld[s] : static_cast<double>(l[s]);
      stats.seen = seen[s] ? 1.0f : 0.0f;
      p.partial_stats[slot] = stats;
    }
    if constexpr (MODE != AttentionMode::Stats) {
#pragma unroll
      for (int i = 0; i < DPL; ++i) {
        const int64_t d = lane + 32 * i;
        if (d < value_dim) p.partial_acc[slot * value_dim + d] = acc[s][i];
      }
    }
  }
  if constexpr (kFusedCombine) combine_if_last(p, item, task.item);
}

template <AttentionMode MODE>
__global__ void attention_combine_kernel(AttentionParams p) {
  dependents_may_launch();  // a dependent launch, as attention_task_kernel
  wait_for_prerequisites();
  combine_item<MODE, false>(p, load_item(p));
}

template <int DPL, AttentionMode MODE>
void launch_tasks_for(const AttentionParams& params, int64_t n_tasks, cudaStream_t stream) {
  const size_t shared = task_shared_bytes(MODE, params.head_dim, params.values_in_keys);
  const auto run = [&](auto kernel) {
    if (shared > 48 * 1024) {
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(shared));
    }
    const dim3 grid = params.decode.n_seqs > 0 ? dim3(static_cast<unsigned>(decode_items(params.decode)),
                                                      static_cast<unsigned>(params.decode.max_splits))
                                               : dim3(static_cast<unsigned>(n_tasks));
    launch_kernel(kernel, grid, kThreads, shared, stream, params);
  };
  using tensor::DType;
  // Each cache type's Flash kernel, with the fused combine or without.
  const auto flash = [&]<bool kFused>() {
    switch (params.cache_type) {
      case DType::F16: return run(attention_task_kernel<DPL, MODE, DType::F16, kFused>);
      case DType::F32: return run(attention_task_kernel<DPL, MODE, DType::F32, kFused>);
      case DType::BF16: return run(attention_task_kernel<DPL, MODE, DType::BF16, kFused>);
      case DType::Q8_0: return run(attention_task_kernel<DPL, MODE, DType::Q8_0, kFused>);
      case DType::Q4_0: return run(attention_task_kernel<DPL, MODE, DType::Q4_0, kFused>);
      case DType::FP8_E4M3: return run(attention_task_kernel<DPL, MODE, DType::FP8_E4M3, kFused>);
      default: break;  // CudaBackend::do_supports_kv_type refuses the others at load
    }
  };
  if constexpr (MODE != AttentionMode::Flash) {
    // The exact modes are llama.cpp's arithmetic for an f16 V cache, and K and V share a type.
    run(attention_task_kernel<DPL, MODE, DType::F16>);
  } else if constexpr (fused_combine_dims(DPL)) {
    if (params.combine_counters != nullptr) {
      flash.template operator()<true>();
    } else {
      flash.template operator()<false>();
    }
  } else {
    flash.template operator()<false>();
  }
}

template <AttentionMode MODE>
void launch_tasks_mode(const AttentionParams& params, int64_t n_tasks, cudaStream_t stream) {
  if (params.head_dim <= 64) {
    launch_tasks_for<2, MODE>(params, n_tasks, stream);
  } else if (params.head_dim <= 128) {
    launch_tasks_for<4, MODE>(params, n_tasks, stream);
  } else if (params.head_dim <= kMaxHeadDim) {
    launch_tasks_for<8, MODE>(params, n_tasks, stream);
  } else {  // a latent cache's rows (kMaxLatentHeadDim; the backend refuses wider)
    launch_tasks_for<(kMaxLatentHeadDim + 31) / 32, MODE>(params, n_tasks, stream);
  }
}

}  // namespace

void launch_attention_tasks(AttentionMode mode, const AttentionParams& params, int64_t n_tasks,
                            cudaStream_t stream) {
  if (params.decode.n_seqs == 0 && n_tasks == 0) return;
  switch (mode) {
    case AttentionMode::Flash:
      return launch_tasks_mode<AttentionMode::Flash>(params, n_tasks, stream);
    case AttentionMode::Stats:
      return launch_tasks_mode<AttentionMode::Stats>(params, n_tasks, stream);
    case AttentionMode::ExactPv:
      return launch_tasks_mode<AttentionMode::ExactPv>(params, n_tasks, stream);
  }
}

void launch_attention_combine(AttentionMode mode, const AttentionParams& params, int64_t n_items,
                              cudaStream_t stream) {
  if (params.decode.n_seqs > 0) n_items = decode_items(params.decode);
  if (n_items == 0) return;
  const auto grid = static_cast<unsigned>(n_items);
  switch (mode) {
    case AttentionMode::Flash:
      launch_kernel(attention_combine_kernel<AttentionMode::Flash>, grid, kThreads, 0, stream, params);
      break;
    case AttentionMode::Stats:
      launch_kernel(attention_combine_kernel<AttentionMode::Stats>, grid, kThreads, 0, stream, params);
      break;
    case AttentionMode::ExactPv:
      launch_kernel(attention_combine_kernel<AttentionMode::ExactPv>, grid, kThreads, 0, stream, params);
      break;
  }
}

}  // namespace lumen::backend::cuda
