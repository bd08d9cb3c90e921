#pragma once
// The CUDA backend's kernels run on a CPU, for tests (tests/unit/cuda_sim): the .cu files are
// compiled by the host compiler against this header (through the shim headers beside it, which
// stand in for cuda_runtime.h and the others), and each kernel launch runs there and then, one
// block after another, each thread of a block a fiber.
//
// Why: most sessions have no GPU, and a kernel written without one used to meet its first run on
// borrowed device minutes. Here its index arithmetic, shared-memory staging, barriers and
// warp-wide operations run for real on a CPU, under ASan + UBSan in the debug build, so a wrong
// offset, a missing barrier or an out-of-bounds load fails a unit test instead.
//
// What is faithful:
//  - __syncthreads waits for every thread of the block that has not returned; __syncwarp, the
//    shuffles, ballots and the tensor-core products wait for every lane their mask names. A lane
//    named in a mask that has already returned, a barrier that can never complete (threads waiting
//    at different barriers) and masks that disagree are reported as errors, which a GPU would turn
//    into a hang or garbage.
//  - Threads run until their next barrier in an order the test picks (Schedule): a kernel that
//    reads shared memory another thread writes without a barrier between gives different results
//    in the two orders.
//  - cp.async copies land only at the cp.async.wait_group that covers them.
//  - mma.sync products follow the PTX ISA's fragment layouts (spelled here, apart from the
//    kernels' own mma_fragments.h), summed exactly (f16 products in double, s8 in int).
//  - A launch with no blocks, more than 1024 threads a block, or more dynamic shared memory than
//    the kernel was allowed (48 KiB unless cudaFuncSetAttribute raised it, 227 KiB at most) does not
//    run and sets the error cudaGetLastError returns, as on the device.
// What is not: timing, occupancy, the memory model beyond barriers (every access is coherent),
// and concurrent blocks (a kernel whose blocks wait for each other would never finish).
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tensor/fp16.h"

#define LUMEN_CUDA_SIM 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __grid_constant__
// A block's threads share a kernel's function-local statics: blocks run one after another.
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return {x, y, z, w}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
inline float __half2float(__half h) { return lumen::tensor::fp16_to_float(h.bits); }
inline __half __float2half_rn(float f) { return {lumen::tensor::float_to_fp16(f)}; }
inline uint16_t __half_as_ushort(__half h) { return h.bits; }
inline __half __ushort_as_half(uint16_t bits) { return {bits}; }

// The runtime API the kernels' launchers call.
struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901
};
using cudaError = cudaError_t;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 5 };
union cudaLaunchAttributeValue {
  int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
};

#include "runtime_api.h"

namespace cuda_sim {

// The order a block's threads take turns in between barriers.
enum class Schedule { Forward, Reverse };
void set_schedule(Schedule schedule);
// Streaming multiprocessors the simulated device reports (occupancy-based grids read it).
inline constexpr int kMultiprocessors = 132;

void* dynamic_shared();

void syncthreads();
bool syncthreads_and(bool predicate);
void syncwarp(unsigned mask);
enum class Shuffle { Index, Up, Down, Xor };
uint64_t shuffle(unsigned mask, uint64_t bits, Shuffle kind, int arg, int width);
unsigned ballot(unsigned mask, bool predicate);
void trap();  // ends the thread; the launch throws (never returns)

// cp.async: 16 bytes copied when a wait covers the group they were committed in.
void copy_async(void* dst, const void* src, size_t bytes);
void commit_copies();
void wait_copies(int pending);

// The tensor cores' warp-wide products (mma.sync.aligned.m16n8k16 f16 -> f32, m16n8k32 and
// m16n8k16 s8 -> s32): c += a b over the fragments every lane of the warp holds.
void mma_f16(float c[4], const uint32_t a[4], const uint32_t b[2]);
void mma_s8(int c[4], const uint32_t a[4], const uint32_t b[2]);
void mma_s8_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b);

// Runs `body` as every thread of every block of the grid; false (and the launch error set) when
// the device would have refused the launch. `kernel` identifies the function for its shared
// memory limit.
bool run_grid(const void* kernel, dim3 grid, dim3 block, size_t shared, const std::function<void()>& body);
cudaError_t take_last_error();
cudaError_t set_max_dynamic_shared(const void* kernel, int bytes);

template <typename T>
T shuffle_as(unsigned mask, T value, Shuffle kind, int arg, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = shuffle(mask, bits, kind, arg, width);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// kernel<<<grid, block, shared, stream>>>(args...) becomes launcher(kernel, grid, block, shared,
// stream)(args...) (translate_cu.py).
template <typename... Params>
struct Launcher {
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t shared;
  // Runs the grid now, or when the graph being captured is launched, with the arguments of now.
  template <typename... Args>
  void operator()(Args&&... args) const {
    std::tuple<std::remove_cv_t<Params>...> params(std::forward<Args>(args)...);
    enqueue(Work::Kernel, [k = kernel, g = grid, b = block, s = shared, params] {
      run_grid(reinterpret_cast<const void*>(k), g, b, s, [&] { std::apply(k, params); });
    });
  }
};
template <typename... Params>
Launcher<Params...> launcher(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared = 0,
                             cudaStream_t = nullptr) {
  return {kernel, grid, block, shared};
}

}  // namespace cuda_sim

// The running thread's coordinates: plain variables the scheduler sets each time it resumes a
// thread (threads switch only at barriers).
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

inline void __syncthreads() { cuda_sim::syncthreads(); }
inline int __syncthreads_and(int predicate) { return cuda_sim::syncthreads_and(predicate != 0) ? 1 : 0; }
inline int __syncthreads_or(int predicate) { return cuda_sim::syncthreads_and(predicate == 0) ? 0 : 1; }
// Every access is coherent here and blocks run one at a time: a fence orders nothing more, and a
// load that bypasses L1 is a load.
inline void __threadfence() {}
template <typename T>
T __ldcg(const T* p) {
  return *p;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { cuda_sim::syncwarp(mask); }
template <typename T>
T __shfl_sync(unsigned mask, T value, int src_lane, int width = 32) {
  return cuda_sim::shuffle_as(mask, value, cuda_sim::Shuffle::Index, src_lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return cuda_sim::shuffle_as(mask, value, cuda_sim::Shuffle::Up, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return cuda_sim::shuffle_as(mask, value, cuda_sim::Shuffle::Down, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  return cuda_sim::shuffle_as(mask, value, cuda_sim::Shuffle::Xor, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) { return cuda_sim::ballot(mask, predicate != 0); }
inline int __any_sync(unsigned mask, int predicate) { return cuda_sim::ballot(mask, predicate != 0) != 0 ? 1 : 0; }
inline void __trap() { cuda_sim::trap(); }
inline void __nanosleep(unsigned) {}

template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i)) *
         static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  }
  return c;
}
// Blocks run one at a time and their threads take turns only at barriers: a read-modify-write is
// atomic as written.
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
// CUDA's min and max for mixed integer arguments, as device code calls them.
template <typename A, typename B>
requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B> std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(a) : static_cast<C>(b);
}
template <typename A, typename B>
requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B> std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
using std::isfinite;
using std::isinf;
using std::isnan;

inline cudaError_t cudaGetLastError() { return cuda_sim::take_last_error(); }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int) {
  *value = attribute == cudaDevAttrMultiProcessorCount ? cuda_sim::kMultiprocessors : 0;
  return cudaSuccess;
}
template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
  return cuda_sim::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), value);
}
// Blocks a multiprocessor would hold: the simulation reports two for any kernel (what the grids
// sized from it are tested with; a device's own figure is for a GPU run to meet).
template <typename Kernel>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel, int, size_t) {
  *blocks = 2;
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t = nullptr) {
  cuda_sim::enqueue(
      cuda_sim::Work::Fill, [=] { std::memset(p, value, bytes); }, bytes);
  return cudaSuccess;
}
template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...), Args&&... args) {
  cuda_sim::launcher(kernel, config->gridDim, config->blockDim, config->dynamicSmemBytes)(std::forward<Args>(args)...);
  return cudaSuccess;  // a refused launch is reported through cudaGetLastError, as here
}
