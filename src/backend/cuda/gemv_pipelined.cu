// The tiled GEMV's arithmetic (gemv_tile_dot.cuh: gemv.cu's results bit for bit) with the next
// tile always in flight: a warp copies its tiles into shared memory with cp.async, two stages,
// and starts the copy of item k + 1 before it computes item k. The launch has as many blocks as
// the device holds at once, each warp taking every W-th row of the launch (gemv_pipeline.h).
//
// Why: the tiled kernel's warp loads a row's tile, waits for it, computes, stores and exits; while
// it computes, none of its bytes are in flight, and a new block takes its place only when all four
// of its warps are done. On the H200 it read 1.9-2.1 TB/s of the 4.3 the device copies at
// (BENCHMARKS.md, "CUDA", 2026-11-28), and an 8B Q4_0 decode step spends most of its time in it.
// Here a warp's loads overlap its own arithmetic, and rows never wait for a block to retire. A
// matrix of fewer rows than the device has warps (a 1B model's attention) gets one row per warp,
// the tiled kernel's layout: only the rows of several tiles (wider than 4096 values) then gain.
//
// Float weights (F32, F16, BF16) take the same kernel with 4 KB tiles against f32 activations:
// each lane adds its vectors' products in order (as batch-invariant as the streaming kernel; the
// sums are grouped differently, so the bits are not gemv_stream.cu's).
//
// Written on 2026-11-30 without a GPU (CudaBackendOptions::gemv = GemvKernels::Pipelined,
// LUMEN_CUDA_GEMV=pipelined); its layout is checked on a CPU (tests/unit/cuda_host/
// gemv_pipeline_test.cc), its bits against gemv.cu's on a GPU (CudaPipelinedGemv).
#include <cstdint>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/gemv_pipeline.h"
#include "backend/cuda/gemv_tile_dot.cuh"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

namespace {

using tensor::DType;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kStages = 2;
static_assert(kMaxPipelinedGemvMatrices == kMaxTiledGemvMatrices);

// As gemv_tiled.cu's: a warp brings this much of its first row into L2 before it waits for the
// kernel ahead (a dependent launch).
constexpr int64_t kPrefetchBytes = 16 * 1024;

struct PipelinedGroup {
  const uint8_t* weights[kMaxPipelinedGemvMatrices];
  float* y[kMaxPipelinedGemvMatrices];
  int64_t ys[kMaxPipelinedGemvMatrices];
  int64_t row_start[kMaxPipelinedGemvMatrices + 1];  // launch rows of matrix m: [row_start[m], row_start[m + 1])
  int n;
  bool prefetch;  // a dependent launch (dependent_launch.cuh)
};

// 16 bytes from global to shared memory without passing through registers (sm_80+; the plain copy
// elsewhere, which the launcher never asks for).
__device__ __forceinline__ void copy_async_16(uint4* dst, const uint4* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(src) : "memory");
#elif defined(LUMEN_CUDA_SIM)
  ::cuda_sim::copy_async(dst, src, 16);  // lands at the wait that covers it (tests/unit/cuda_sim)
#else
  *dst = __ldg(src);
#endif
}

// Closes the lane's copies issued since the last commit into one group (possibly empty).
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#elif defined(LUMEN_CUDA_SIM)
  ::cuda_sim::commit_copies();
#endif
}

// Waits until at most `pending` of the lane's newest groups are still in flight.
template <int pending>
__device__ __forceinline__ void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
#elif defined(LUMEN_CUDA_SIM)
  ::cuda_sim::wait_copies(pending);
#endif
}

// What an instantiation reads. A tile is kVectors 16-byte vectors of a row holding kUnits units
// (the units a row has: row_units); dot adds the products of a staged tile's first n units.
// Quantized types: gemv_tile_dot.cuh's tiles against Q8 activations.
template <DType F>
struct QuantizedTiles {
  using Activations = Q8Activations;
  static constexpr int kVectors = kGemvTileVectors<F>;
  static constexpr int kUnits = kGemvTileBlocks<F>;  // blocks (legacy) or super-blocks (K-quants)
  __device__ static int64_t row_units(int64_t cols) { return cols / kGemvValuesPerBlock<F>; }
  template <int NT>
  __device__ static void dot(const uint8_t* staged, int64_t tile, int n, int64_t cols, const Activations& x, int64_t t0,
                             int nt, int lane, float* acc) {
    tile_dot<F, NT>(staged, tile, n, cols, x, t0, nt, lane, acc);
  }
};

// Float types: 4 KB tiles whose units are their vectors, against f32 activations (token t's row at
// x + t * stride). Lane i takes the tile's vectors i, i + 32, ..., each value's product added to
// the token's sum in the row's order: a token's result is the same in any batch.
struct FloatActivations {
  const float* x;
  int64_t stride;
};

template <DType F>
struct FloatTiles {
  using Activations = FloatActivations;
  static constexpr int kVectors = 256;
  static constexpr int kUnits = kVectors;
  __device__ static int64_t row_units(int64_t cols) { return cols / kVectorValues<F>; }
  template <int NT>
  __device__ static void dot(const uint8_t* staged, int64_t tile, int n, int64_t /*cols*/, const Activations& x,
                             int64_t t0, int nt, int lane, float* acc) {
    const auto* vectors = reinterpret_cast<const uint4*>(staged);
    for (int i = lane; i < n; i += 32) {
      float w[kVectorValues<F>];
      widen_vector<F>(vectors[i], w);
      const int64_t first = (tile * kVectors + i) * kVectorValues<F>;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < nt) {
          const float* xt = x.x + (t0 + t) * x.stride + first;
#pragma unroll
          for (int e = 0; e < kVectorValues<F>; ++e) acc[t] = fmaf(w[e], xt[e], acc[t]);
        }
      }
    }
  }
};

// Starts copying a tile's `n` vectors from src into stage dst: the lane's share.
template <int kVectors>
__device__ __forceinline__ void stage_tile(const uint4* __restrict__ src, uint4* __restrict__ dst, int n, int lane) {
#pragma unroll
  for (int k = 0; k < (kVectors + 31) / 32; ++k) {
    const int i = lane + 32 * k;
    if (i < n) copy_async_16(dst + i, src + i);
  }
}

template <typename Tiles, int NT>
__global__ void __launch_bounds__(kThreads, 4)
    gemv_pipelined_kernel(const __grid_constant__ PipelinedGroup group, size_t row_bytes, int64_t cols,
                          typename Tiles::Activations x, int64_t t0, int nt) {
  __shared__ uint4 stages[kWarps][kStages][Tiles::kVectors];
  dependents_may_launch();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t row_units = Tiles::row_units(cols);
  const int64_t vectors = static_cast<int64_t>(row_bytes) / 16;
  const GemvWarpWork work =
      gemv_warp_work(static_cast<int64_t>(blockIdx.x) * kWarps + warp, static_cast<int64_t>(gridDim.x) * kWarps,
                     group.row_start[group.n], (row_units + Tiles::kUnits - 1) / Tiles::kUnits);
  if (work.rows == 0) return;  // the whole warp; nothing below waits for other warps

  // Where an item's tile starts in device memory, and how many of its vectors there are.
  const auto tile_source = [&](const GemvItem& it) {
    const GemvRowRef r = locate_gemv_row(group.row_start, group.n, it.row);
    return reinterpret_cast<const uint4*>(group.weights[r.m] + r.row * static_cast<int64_t>(row_bytes)) +
           it.tile * Tiles::kVectors;
  };
  const auto tile_vectors = [&](const GemvItem& it) {
    return static_cast<int>(min(static_cast<int64_t>(Tiles::kVectors), vectors - it.tile * Tiles::kVectors));
  };

  if (group.prefetch) {
    prefetch_to_l2(tile_source(first_gemv_item(work)), min(static_cast<int64_t>(row_bytes), kPrefetchBytes), lane, 32);
  }
  wait_for_prerequisites();

  float acc[NT] = {};
  const auto stage = [&](bool copy, const GemvItem& it, int s) {
    if (copy) stage_tile<Tiles::kVectors>(tile_source(it), stages[warp][s], tile_vectors(it), lane);
    commit_copies();  // an empty group after the last item keeps "all but the newest" meaning this one
  };
  const auto compute = [&](const GemvItem& it, int s) {
    wait_copies<1>();
    __syncwarp();  // every lane's copies of this item are visible to the whole warp
    const int n = static_cast<int>(min(static_cast<int64_t>(Tiles::kUnits), row_units - it.tile * Tiles::kUnits));
    Tiles::template dot<NT>(reinterpret_cast<const uint8_t*>(stages[warp][s]), it.tile, n, cols, x, t0, nt, lane, acc);
    if (it.last_tile(work)) {
      const GemvRowRef r = locate_gemv_row(group.row_start, group.n, it.row);
      store_warp_results<NT>(acc, nt, group.y[r.m], group.ys[r.m], r.row);
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
    }
    __syncwarp();  // every lane has read stage s before the item after next is copied into it
  };
  walk_gemv_items(work, stage, compute);
}

// Blocks of `kernel` (kThreads threads, static shared memory only) the current device holds at
// once: its occupancy times the multiprocessors, asked once per device and kernel.
int64_t resident_blocks(const void* kernel) {
  static std::mutex mutex;
  static std::vector<std::tuple<int, const void*, int64_t>> known;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [d, k, blocks] : known) {
    if (d == device && k == kernel) return blocks;
  }
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 1;  // still correct: one block walks every row
  }
  const int64_t blocks = static_cast<int64_t>(per_sm < 1 ? 1 : per_sm) * (sms < 1 ? 1 : sms);
  known.emplace_back(device, kernel, blocks);
  return blocks;
}

// The group of `matrices` as the kernel takes it; false where a matrix is not 16-byte aligned.
bool make_group(std::span<const TiledGemvMatrix> matrices, size_t row_bytes, cudaStream_t stream, PipelinedGroup& group,
                int64_t& total_rows) {
  if (matrices.empty() || matrices.size() > static_cast<size_t>(kMaxPipelinedGemvMatrices) || row_bytes % 16 != 0) {
    return false;
  }
  group = PipelinedGroup{};
  total_rows = 0;
  for (size_t i = 0; i < matrices.size(); ++i) {
    const TiledGemvMatrix& m = matrices[i];
    if (reinterpret_cast<uintptr_t>(m.w) % 16 != 0) return false;
    group.weights[i] = static_cast<const uint8_t*>(m.w);
    group.y[i] = m.y;
    group.ys[i] = m.y_stride;
    group.row_start[i] = total_rows;
    total_rows += m.rows;
  }
  group.n = static_cast<int>(matrices.size());
  group.row_start[group.n] = total_rows;
  group.prefetch = dependent_launch(stream);
  return true;
}

// One launch of Tiles' kernel over the group, one accumulator for one token (batch-1 decode: fewer
// registers) or kGemvMaxTokens; both add a token's products in the same order.
template <typename Tiles>
void launch_pipelined(const PipelinedGroup& group, int64_t total_rows, size_t row_bytes, int64_t cols,
                      const typename Tiles::Activations& x, int64_t token_offset, int64_t n_tokens,
                      cudaStream_t stream) {
  if (total_rows == 0 || n_tokens <= 0) return;
  auto* kernel = n_tokens == 1 ? gemv_pipelined_kernel<Tiles, 1> : gemv_pipelined_kernel<Tiles, kGemvMaxTokens>;
  const int64_t blocks =
      pipelined_gemv_blocks(total_rows, kWarps, resident_blocks(reinterpret_cast<const void*>(kernel)));
  launch_kernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream, group, row_bytes, cols, x,
                token_offset, static_cast<int>(n_tokens));
}

}  // namespace

bool launch_gemv_quantized_pipelined_group(tensor::DType type, size_t row_bytes, int64_t cols,
                                           std::span<const TiledGemvMatrix> matrices, const Q8Activations& x,
                                           int64_t token_offset, int64_t n_tokens, cudaStream_t stream) {
  PipelinedGroup group;
  int64_t total_rows = 0;
  if (n_tokens > kGemvMaxTokens || !make_group(matrices, row_bytes, stream, group, total_rows)) return false;
  return dispatch_quantized_gemv(type, [&]<DType F>() {
    launch_pipelined<QuantizedTiles<F>>(group, total_rows, row_bytes, cols, x, token_offset, n_tokens, stream);
  });
}

bool launch_gemv_float_pipelined(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                                 const float* x, int64_t x_stride, int64_t n_tokens, float* y, int64_t y_stride,
                                 cudaStream_t stream) {
  const TiledGemvMatrix one{w, rows, y, y_stride};
  PipelinedGroup group;
  int64_t total_rows = 0;
  if (n_tokens > kGemvMaxTokens || !make_group({&one, 1}, row_bytes, stream, group, total_rows)) return false;
  const FloatActivations activations{x, x_stride};
  switch (type) {
    case DType::F32:
      launch_pipelined<FloatTiles<DType::F32>>(group, total_rows, row_bytes, cols, activations, 0, n_tokens, stream);
      return true;
    case DType::F16:
      launch_pipelined<FloatTiles<DType::F16>>(group, total_rows, row_bytes, cols, activations, 0, n_tokens, stream);
      return true;
    case DType::BF16:
      launch_pipelined<FloatTiles<DType::BF16>>(group, total_rows, row_bytes, cols, activations, 0, n_tokens, stream);
      return true;
    default: return false;
  }
}

}  // namespace lumen::backend::cuda
