// The simulated device itself (sim/cuda_sim.h): the warp-wide operations give what the CUDA
// programming guide says, a barrier waits for every thread, and the mistakes a GPU would turn into
// a hang or garbage (a barrier some threads never reach, a mask naming a lane that has returned,
// an oversized launch) are reported. The kernels' tests rely on each of these.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "unit/cuda_sim/sim/cuda_sim.h"

namespace {

__global__ void shuffle_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int base = static_cast<int>(threadIdx.x) * 5;
  out[base + 0] = __shfl_xor_sync(0xffffffffu, lane * 10, 3);
  out[base + 1] = __shfl_sync(0xffffffffu, lane * 10, 7);
  out[base + 2] = __shfl_up_sync(0xffffffffu, lane * 10, 2, 8);  // within segments of 8
  out[base + 3] = __shfl_down_sync(0xffffffffu, lane * 10, 1);
  out[base + 4] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0) & 0x7fffffffu);
}

TEST(CudaSim, WarpShufflesAndBallotsFollowTheProgrammingGuide) {
  std::vector<int> out(64 * 5, -1);
  cuda_sim::launcher(shuffle_kernel, 1, 64)(out.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  unsigned every_third = 0;
  for (int lane = 0; lane < 32; lane += 3) every_third |= 1u << lane;
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(out[static_cast<size_t>(t * 5 + 0)], (lane ^ 3) * 10) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 5 + 1)], 70) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 5 + 2)], lane % 8 >= 2 ? (lane - 2) * 10 : lane * 10) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 5 + 3)], lane < 31 ? (lane + 1) * 10 : lane * 10) << t;
    EXPECT_EQ(out[static_cast<size_t>(t * 5 + 4)], static_cast<int>(every_third & 0x7fffffffu)) << t;
  }
}

// Thread i writes its slot, then (after the barrier) reads its neighbour's: right in either
// order only with the barrier.
__global__ void neighbour_kernel(int* out, bool barrier) {
  __shared__ int slots[128];
  slots[threadIdx.x] = static_cast<int>(threadIdx.x) + 1000 * static_cast<int>(blockIdx.x);
  if (barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = slots[(threadIdx.x + 1) % blockDim.x];
}

TEST(CudaSim, ABarrierOrdersSharedMemoryAndItsAbsenceShowsInOneOrderOrTheOther) {
  for (const bool barrier : {true, false}) {
    bool all_right = true;
    for (const auto schedule : {cuda_sim::Schedule::Forward, cuda_sim::Schedule::Reverse}) {
      cuda_sim::set_schedule(schedule);
      std::vector<int> out(2 * 128, -1);
      cuda_sim::launcher(neighbour_kernel, 2, 128)(out.data(), barrier);
      for (int b = 0; b < 2; ++b) {
        for (int t = 0; t < 128; ++t) {
          all_right = all_right && out[static_cast<size_t>(b * 128 + t)] == (t + 1) % 128 + 1000 * b;
        }
      }
    }
    cuda_sim::set_schedule(cuda_sim::Schedule::Forward);
    EXPECT_EQ(all_right, barrier);
  }
}

// Lane 0 waits for lane 1 at a warp barrier, lane 1 for lane 0 at the block's: neither completes.
__global__ void deadlock_kernel() {
  if (threadIdx.x == 0) {
    __syncwarp(0x3u);
  } else {
    __syncthreads();
  }
}

__global__ void returned_lane_kernel(float* out) {
  if (threadIdx.x == 5) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

// Each half of the warp shuffles within itself, in its own branch, with its own mask: the halves
// meet apart (lanes 0-15 swap neighbours, lanes 16-31 lanes two apart), twice.
__global__ void half_warps_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane;
  if (lane < 16) {
    v = __shfl_xor_sync(0x0000ffffu, v, 1);
    v = __shfl_xor_sync(0x0000ffffu, v, 1) + 100;
  } else {
    v = __shfl_xor_sync(0xffff0000u, v, 2);
    v = __shfl_xor_sync(0xffff0000u, v, 4);
  }
  out[lane] = v;
}

TEST(CudaSim, DisjointHalvesOfAWarpMeetApart) {
  for (cuda_sim::Schedule schedule : {cuda_sim::Schedule::Forward, cuda_sim::Schedule::Reverse}) {
    cuda_sim::set_schedule(schedule);
    std::vector<int> out(32, -1);
    cuda_sim::launcher(half_warps_kernel, 1, 32)(out.data());
    for (int lane = 0; lane < 32; ++lane) {
      EXPECT_EQ(out[static_cast<size_t>(lane)], lane < 16 ? lane + 100 : lane ^ 2 ^ 4) << lane;
    }
  }
  cuda_sim::set_schedule(cuda_sim::Schedule::Forward);
}

// Half the warp at a __syncwarp, half at a shuffle, with the same mask: undefined on a GPU.
__global__ void mixed_meeting_kernel(float* out) {
  if (threadIdx.x < 16) {
    __syncwarp();
  } else {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
  }
}

__global__ void trap_kernel() {
  if (blockIdx.x == 1 && threadIdx.x == 3) __trap();
}

TEST(CudaSim, MistakesAGpuWouldHangOnAreErrors) {
  EXPECT_THROW(cuda_sim::launcher(deadlock_kernel, 1, 2)(), std::runtime_error);
  std::vector<float> out(32);
  EXPECT_THROW(cuda_sim::launcher(returned_lane_kernel, 1, 32)(out.data()), std::runtime_error);
  EXPECT_THROW(cuda_sim::launcher(trap_kernel, 2, 32)(), std::runtime_error);
  EXPECT_THROW(cuda_sim::launcher(mixed_meeting_kernel, 1, 32)(out.data()), std::runtime_error);
}

__global__ void noop_kernel() {}

TEST(CudaSim, LaunchesTheDeviceWouldRefuseSetTheLastError) {
  cuda_sim::launcher(noop_kernel, 0, 32)();
  EXPECT_NE(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // taken
  cuda_sim::launcher(noop_kernel, 1, 1025)();
  EXPECT_NE(cudaGetLastError(), cudaSuccess);
  cuda_sim::launcher(noop_kernel, 1, 32, 64 << 10)();  // past 48 KiB without the attribute
  EXPECT_NE(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaFuncSetAttribute(noop_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10), cudaSuccess);
  cuda_sim::launcher(noop_kernel, 1, 32, 64 << 10)();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A cp.async copy lands at the wait that covers its group, not before.
__global__ void async_copy_kernel(const int* src, int* seen) {
  __shared__ int staged[2];
  staged[0] = staged[1] = -1;
  cuda_sim::copy_async(&staged[0], &src[0], sizeof(int));
  cuda_sim::commit_copies();
  cuda_sim::copy_async(&staged[1], &src[1], sizeof(int));
  cuda_sim::commit_copies();
  seen[0] = staged[0];
  cuda_sim::wait_copies(1);
  seen[1] = staged[0];
  seen[2] = staged[1];
  cuda_sim::wait_copies(0);
  seen[3] = staged[1];
}

TEST(CudaSim, AsyncCopiesLandAtTheirWait) {
  const std::vector<int> src = {7, 8};
  std::vector<int> seen(4, 0);
  cuda_sim::launcher(async_copy_kernel, 1, 1)(src.data(), seen.data());
  EXPECT_EQ(seen, (std::vector<int>{-1, 7, -1, 8}));
}

}  // namespace
