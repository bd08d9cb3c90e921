// GEMV with gemv.cu's arithmetic and order, fed by 16-byte loads: one warp per weight row, as in
// gemv.cu, but the warp first copies a tile of its row (4096 values) into its own slice of
// shared memory with every lane's 16-byte loads issued before any is stored, then decodes the
// tile's blocks from there.
//
// Why: gemv.cu's lanes read their blocks in place, 2 or 4 bytes per load (blocks of 18, 22, 34,
// 110 or 210 bytes straddle 16-byte vectors), so a warp has little in flight and a quantized
// decode step reads HBM at 790 GB/s of an H200's 4.3 TB/s (BENCHMARKS.md, "CUDA", 2026-11-27).
// gemv_stream.cu stages a row through shared memory too, but with a block of 4 warps per row and
// a block-wide barrier per tile; here a warp waits only for itself (__syncwarp), and a lane has
// 5-9 loads in flight.
//
// Lane i decodes the tile's blocks i, i + 32, ... (K-quants: units, 8 lanes per super-block),
// which over the tiles is the order gemv.cu's lane i adds them in, and the warp adds its lanes
// with the same butterfly: the results are gemv.cu's bit for bit (tests/unit/backend_cuda/
// stream_gemv_test.cc checks that), so the choice between the two is a matter of speed only.
//
// A gated FFN's gate and up may also run SwiGLU in the same launch (glu_if_last, below).
#include <cstdint>
#include <span>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/gemv_tile_dot.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/q8_block_quantize.cuh"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kWarps = 4;  // rows per block, one warp each
constexpr int kThreads = 32 * kWarps;
template <DType F>
constexpr int kTileBlocks = kGemvTileBlocks<F>;
template <DType F>
constexpr int kTileVectors = kGemvTileVectors<F>;
template <DType F>
constexpr int kLoadsPerLane = (kTileVectors<F> + 31) / 32;

// What a warp brings into L2 of its row before it waits for the kernel ahead (a dependent launch,
// dependent_launch.cuh): all of a 1B or 8B model's rows (at most 14 336 Q8_0 values).
constexpr int64_t kPrefetchBytes = 16 * 1024;

// The matrices of one launch (launch_gemv_quantized_tiled_group): matrix i takes blocks
// [first_block[i], first_block[i + 1]). Passed by value as the kernel's parameter.
struct TiledGroup {
  const uint8_t* weights[kMaxTiledGemvMatrices];
  float* y[kMaxTiledGemvMatrices];
  int64_t rows[kMaxTiledGemvMatrices];
  int64_t ys[kMaxTiledGemvMatrices];
  unsigned first_block[kMaxTiledGemvMatrices];
  int n;
  // A dependent launch (dependent_launch.cuh): a warp brings its row into L2 before it waits for
  // the kernel ahead, so its first loads overlap that kernel's end.
  bool prefetch;
  // The legacy kernels instantiated with kGlu: SwiGLU over matrices 0 (gate) and 1 (up).
  GluEpilogue glu;
};

// Which matrix of the group this block's warps read (m), from which of its rows (first_row + warp).
struct TiledTarget {
  int m;
  int64_t first_row;
};

// The group is a __grid_constant__ parameter, so reading it at an index known only at run time
// reads the parameter in place (no copy to local memory), and the kernels read a field where
// they use it rather than hold it in registers.
__device__ __forceinline__ TiledTarget target_of_block(const TiledGroup& g) {
  const auto block = static_cast<unsigned>(blockIdx.x);
  int m = 0;
  while (m + 1 < g.n && block >= g.first_block[m + 1]) ++m;
  return {m, static_cast<int64_t>(block - g.first_block[m]) * kWarps};
}

// The GLU epilogue (launch_gemv_quantized_tiled_glu): gate and up rows in slices of 32, each the
// values of one quantized block of SwiGLU's output. A slice's gate and up rows are 2 * 32 / kWarps
// blocks of the launch; each counts itself on the slice's counter once its results are written
// and visible device-wide, and the one that counts last reads them all through L2, computes the
// slice's SwiGLU (swiglu_value) and quantizes it (quantize_q8_32_warp): the SwiGLU launch's
// arithmetic on the same inputs, so its bits. It then sets the count back to 0 for the next
// launch (a replayed graph's included). The attention's fused combine (attention_combine.cuh,
// combine_if_last) is the same pattern.
constexpr int kGluSlice = 32;
constexpr unsigned kGluArrivals = 2 * kGluSlice / kWarps;

__device__ __forceinline__ void glu_if_last(const TiledGroup& g, int64_t n_tokens) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) __threadfence();  // lane 0 wrote the warp's results (store_warp_results)
  // Found again from the block's index rather than kept through the kernel's loop, where one
  // more live value made ptxas spill (Q5_1, one token).
  const int64_t slice = target_of_block(g).first_row / kGluSlice;
  bool last = false;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned before = atomicAdd(&g.glu.counters[slice], 1u);
    last = before + 1 == kGluArrivals;
    if (last) g.glu.counters[slice] = 0;
  }
  if (__syncthreads_or(last) == 0) return;
  __threadfence();
  const int64_t row = slice * kGluSlice + lane;
  const bool with_sum = g.glu.act == DType::Q8_1;
  for (int64_t t = warp; t < n_tokens; t += kWarps) {
    const float v = swiglu_value(__ldcg(g.y[0] + t * g.ys[0] + row), __ldcg(g.y[1] + t * g.ys[1] + row));
    g.glu.out[t * g.glu.out_stride + row] = v;
    quantize_q8_32_warp(v, lane, t, slice, g.glu.q, with_sum);
  }
}

// Copies vectors [0, n) of src to the warp's tile: all of the lane's loads, then its stores.
template <DType F>
__device__ __forceinline__ void stage_warp_tile(const uint4* __restrict__ src, uint4* __restrict__ dst, int n,
                                                int lane) {
  uint4 v[kLoadsPerLane<F>];
#pragma unroll
  for (int k = 0; k < kLoadsPerLane<F>; ++k) {
    const int i = lane + 32 * k;
    if (i < n) v[k] = __ldg(src + i);
  }
#pragma unroll
  for (int k = 0; k < kLoadsPerLane<F>; ++k) {
    const int i = lane + 32 * k;
    if (i < n) dst[i] = v[k];
  }
}

// Tokens [t0, t0 + n_tokens) in groups of NT, each group a pass over the row as gemv.cu's
// passes are. A row of one tile (4096 values or fewer: most of a 1B or 8B model's matrices) is
// staged once for every group, so a batch of many tokens reads the weights from memory once.
// kGlu: then the GLU epilogue (glu_if_last; every block full, which its launcher ensures).
template <DType F, int NT, bool kGlu>
__global__ void __launch_bounds__(kThreads)
    gemv_tiled_legacy_kernel(const __grid_constant__ TiledGroup group, size_t row_bytes, int64_t cols, Q8Activations x,
                             int64_t t_begin, int64_t n_tokens) {
  __shared__ uint4 tiles[kWarps][kTileVectors<F>];
  dependents_may_launch();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const TiledTarget target = target_of_block(group);
  const int64_t row = target.first_row + warp;
  if (row >= group.rows[target.m]) return;  // the whole warp; nothing below waits for other warps
  const auto* wrow = reinterpret_cast<const uint4*>(group.weights[target.m] + row * static_cast<int64_t>(row_bytes));
  uint4* tile = tiles[warp];
  const auto* staged = reinterpret_cast<const uint8_t*>(tile);
  const int64_t blocks = cols / 32;
  const int64_t vectors = static_cast<int64_t>(row_bytes) / 16;
  const bool one_tile = blocks <= kTileBlocks<F>;
  if (group.prefetch) prefetch_to_l2(wrow, min(static_cast<int64_t>(row_bytes), kPrefetchBytes), lane, 32);
  wait_for_prerequisites();
  for (int64_t g = 0; g < n_tokens; g += NT) {
  const int64_t t0 = t_begin + g;
  const int nt = static_cast<int>(min(static_cast<int64_t>(NT), n_tokens - g));
  float acc[NT] = {};
  for (int64_t b0 = 0, v0 = 0; b0 < blocks; b0 += kTileBlocks<F>, v0 += kTileVectors<F>) {
    const int n_blocks = static_cast<int>(min(static_cast<int64_t>(kTileBlocks<F>), blocks - b0));
    if (g == 0 || !one_tile) {
      stage_warp_tile<F>(wrow + v0, tile, static_cast<int>(min(static_cast<int64_t>(kTileVectors<F>), vectors - v0)),
                         lane);
    }
    __syncwarp();
    legacy_tile_dot<F, NT>(staged, n_blocks, b0, cols, x, t0, nt, lane, acc);
    __syncwarp();  // every lane has read the tile before the next one overwrites it
  }
  store_warp_results<NT>(acc, nt, group.y[target.m] + g * group.ys[target.m], group.ys[target.m], row);
  }
  if constexpr (kGlu) glu_if_last(group, n_tokens);
}

// K-quants: the tiles' units as gemv_tile_dot.cuh's kquant_tile_dot takes them.
template <DType F, int NT>
__global__ void __launch_bounds__(kThreads)
    gemv_tiled_kquant_kernel(const __grid_constant__ TiledGroup group, size_t row_bytes, int64_t cols, Q8Activations x,
                             int64_t t_begin, int64_t n_tokens) {
  __shared__ uint4 tiles[kWarps][kTileVectors<F>];
  dependents_may_launch();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const TiledTarget target = target_of_block(group);
  const int64_t row = target.first_row + warp;
  if (row >= group.rows[target.m]) return;
  const auto* wrow = reinterpret_cast<const uint4*>(group.weights[target.m] + row * static_cast<int64_t>(row_bytes));
  uint4* tile = tiles[warp];
  const auto* staged = reinterpret_cast<const uint8_t*>(tile);
  const int64_t supers = cols / 256;
  const int64_t vectors = static_cast<int64_t>(row_bytes) / 16;
  const bool one_tile = supers <= kTileBlocks<F>;
  if (group.prefetch) prefetch_to_l2(wrow, min(static_cast<int64_t>(row_bytes), kPrefetchBytes), lane, 32);
  wait_for_prerequisites();
  for (int64_t g = 0; g < n_tokens; g += NT) {
  const int64_t t0 = t_begin + g;
  const int nt = static_cast<int>(min(static_cast<int64_t>(NT), n_tokens - g));
  float acc[NT] = {};
  for (int64_t s0 = 0, v0 = 0; s0 < supers; s0 += kTileBlocks<F>, v0 += kTileVectors<F>) {
    const int n_units = 8 * static_cast<int>(min(static_cast<int64_t>(kTileBlocks<F>), supers - s0));
    if (g == 0 || !one_tile) {
      stage_warp_tile<F>(wrow + v0, tile, static_cast<int>(min(static_cast<int64_t>(kTileVectors<F>), vectors - v0)),
                         lane);
    }
    __syncwarp();
    kquant_tile_dot<F, NT>(staged, n_units, s0, cols, x, t0, nt, lane, acc);
    __syncwarp();
  }
  store_warp_results<NT>(acc, nt, group.y[target.m] + g * group.ys[target.m], group.ys[target.m], row);
  }
}

// The group's parameter for `matrices`, and its blocks; false where a matrix's rows do not start
// at 16-byte boundaries or the grid would not fit.
bool make_group(std::span<const TiledGemvMatrix> matrices, size_t row_bytes, cudaStream_t stream, TiledGroup& group,
                int64_t& blocks) {
  if (matrices.empty() || matrices.size() > kMaxTiledGemvMatrices || row_bytes % 16 != 0) return false;
  group = TiledGroup{};
  blocks = 0;
  for (size_t i = 0; i < matrices.size(); ++i) {
    const TiledGemvMatrix& m = matrices[i];
    if (reinterpret_cast<uintptr_t>(m.w) % 16 != 0) return false;
    group.weights[i] = static_cast<const uint8_t*>(m.w);
    group.y[i] = m.y;
    group.rows[i] = m.rows;
    group.ys[i] = m.y_stride;
    group.first_block[i] = static_cast<unsigned>(blocks);
    blocks += (m.rows + kWarps - 1) / kWarps;
    if (blocks > int64_t{0x7FFFFFFF}) return false;
  }
  group.n = static_cast<int>(matrices.size());
  group.prefetch = dependent_launch(stream);
  return true;
}

// The types the GLU epilogue is instantiated for. A K-quant gate and up come with a K-quant down
// projection, which reads Q8_K activations (256-value blocks). Q8_0's one-token kernel spilled with
// the epilogue (8 bytes at 71 registers), and Q8_0 weights run the one-warp GEMV unless
// GemvKernels::Tiled is asked for, so it is left out.
template <typename Launch>
bool dispatch_glu_gemv(DType type, Launch&& launch) {
  switch (type) {
    case DType::Q4_0: launch.template operator()<DType::Q4_0>(); return true;
    case DType::Q4_1: launch.template operator()<DType::Q4_1>(); return true;
    case DType::Q5_0: launch.template operator()<DType::Q5_0>(); return true;
    case DType::Q5_1: launch.template operator()<DType::Q5_1>(); return true;
    default: return false;
  }
}

}  // namespace

bool launch_gemv_quantized_tiled_group(tensor::DType type, size_t row_bytes, int64_t cols,
                                       std::span<const TiledGemvMatrix> matrices, const Q8Activations& x,
                                       int64_t token_offset, int64_t n_tokens, cudaStream_t stream) {
  TiledGroup group;
  int64_t blocks = 0;
  if (!make_group(matrices, row_bytes, stream, group, blocks)) return false;
  if (blocks == 0 || n_tokens == 0) return true;
  const auto grid = static_cast<unsigned>(blocks);
  // One token alone (batch-1 decode) gets an instantiation with one accumulator; both add in the
  // same order.
  const auto launch = [&]<DType F>() {
    if constexpr (hd::kIsKQuant<F>) {
      auto* kernel = n_tokens == 1 ? gemv_tiled_kquant_kernel<F, 1> : gemv_tiled_kquant_kernel<F, kGemvMaxTokens>;
      launch_kernel(kernel, grid, kThreads, 0, stream, group, row_bytes, cols, x, token_offset, n_tokens);
    } else {
      auto* kernel =
          n_tokens == 1 ? gemv_tiled_legacy_kernel<F, 1, false> : gemv_tiled_legacy_kernel<F, kGemvMaxTokens, false>;
      launch_kernel(kernel, grid, kThreads, 0, stream, group, row_bytes, cols, x, token_offset, n_tokens);
    }
  };
  return dispatch_quantized_gemv(type, launch);
}

bool tiled_glu_takes(tensor::DType type, int64_t rows, tensor::DType act) {
  const bool instantiated = type == DType::Q4_0 || type == DType::Q4_1 || type == DType::Q5_0 || type == DType::Q5_1;
  // Whole slices, so every block of the launch is full and takes part in its slice's count.
  return instantiated && rows > 0 && rows % kGluSlice == 0 && (act == DType::Q8_0 || act == DType::Q8_1);
}

bool launch_gemv_quantized_tiled_glu(tensor::DType type, size_t row_bytes, int64_t cols, const TiledGemvMatrix& gate,
                                     const TiledGemvMatrix& up, const Q8Activations& x, int64_t n_tokens,
                                     const GluEpilogue& glu, cudaStream_t stream) {
  // Any number of tokens, as the plain launch takes them (a prompt's, where max_gemv_tokens is
  // raised): the epilogue's block walks the slice's tokens four at a time.
  if (gate.rows != up.rows || !tiled_glu_takes(type, gate.rows, glu.act)) return false;
  const TiledGemvMatrix matrices[] = {gate, up};
  TiledGroup group;
  int64_t blocks = 0;
  if (!make_group(matrices, row_bytes, stream, group, blocks)) return false;
  group.glu = glu;
  if (n_tokens == 0) return true;
  const auto grid = static_cast<unsigned>(blocks);
  const auto launch = [&]<DType F>() {
    auto* kernel =
        n_tokens == 1 ? gemv_tiled_legacy_kernel<F, 1, true> : gemv_tiled_legacy_kernel<F, kGemvMaxTokens, true>;
    launch_kernel(kernel, grid, kThreads, 0, stream, group, row_bytes, cols, x, int64_t{0}, n_tokens);
  };
  return dispatch_glu_gemv(type, launch);
}

}  // namespace lumen::backend::cuda
