#pragma once
// Programmatic dependent launch (compute capability 9.0+; CudaBackendOptions::dependent_launch).
//
// Why: a decode step of a 1B model is ~150 kernels of a few microseconds each, and between two
// dependent kernels the device idles while the first one's last blocks drain, its writes are
// flushed and the second one's blocks are launched and issue their first loads (BENCHMARKS.md,
// "CUDA": a replayed 1B step is far from its bytes' time). A kernel queued as a dependent launch
// may start as soon as every block of the kernel ahead of it has started (and said so with
// dependents_may_launch, below); it runs its prologue (index arithmetic; the GEMVs bring their
// rows of weights into L2) while the kernel ahead finishes, then waits for it (wait_for_prerequisites)
// before it reads anything that kernel, or one before it, wrote.
//
// The rule every kernel launched with launch_kernel below keeps: a thread calls
// wait_for_prerequisites before it reads or writes global memory (it is per thread; once the
// kernel ahead has ended it returns at once). Before it: index arithmetic on the kernel's
// parameters, and L2 prefetches, which are hints that load nothing into the thread (L2 is where
// device memory is coherent, so a line prefetched before the kernel ahead writes it is updated by
// that write).
// A kernel that waits has ended only after the kernel ahead of it ended, so the order holds
// along the whole chain: a kernel reading what was written three kernels back is safe too.
// Kernels launched with <<<...>>> are not dependent launches: they start after the kernel ahead
// of them has ended, as always. Both instructions do nothing on a kernel not launched this way,
// and compile to nothing for devices before sm_90, where launch_kernel never asks for it.
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "backend/cuda/dependent_launch_streams.h"

namespace lumen::backend::cuda {

// Lets the kernel queued after this one start (once every block of this kernel has called it or
// ended). Called first thing: the next kernel waits for this one's end before it reads what this
// one writes, so starting early only overlaps its prologue and launch with this kernel's work.
__device__ __forceinline__ void dependents_may_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Waits until the kernels ahead of this one in the stream have ended and their writes are
// visible. Without a dependent launch they have already.
__device__ __forceinline__ void wait_for_prerequisites() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Asks for the 128-byte lines of [p, p + bytes) to be brought into L2, lane `lane` of `lanes`
// taking every lanes-th line: a GEMV's prologue does it for the weights it is about to read, and
// its loads after the wait hit L2. (Loading the weights into shared memory before the wait, the
// first way tried, spilled registers in the tiled kernels' loops.)
__device__ __forceinline__ void prefetch_to_l2(const void* p, int64_t bytes, int lane, int lanes) {
#if defined(__CUDA_ARCH__)
  const auto* base = static_cast<const char*>(p);
  for (int64_t at = int64_t{128} * lane; at < bytes; at += int64_t{128} * lanes) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(base + at));
  }
#else
  (void)p, (void)bytes, (void)lane, (void)lanes;  // a hint; nothing to do off the device
#endif
}

// kernel<<<grid, block, shared, stream>>>(args...), as a dependent launch when the stream's
// backend asked for them (dependent_launch_streams.h). A failed launch is reported as by <<<>>>:
// through cudaGetLastError, which the backend's check_launch reads after every op.
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                   Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  const bool dependent = dependent_launch(stream);
  config.attrs = dependent ? &attribute : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace lumen::backend::cuda
