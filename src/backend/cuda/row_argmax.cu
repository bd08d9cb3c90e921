// Greedy sampling's reduction on the device (kernels.h, "row_argmax.cu"): each row of a step's
// logits becomes its argmax, its largest value and whether it is all finite, so a greedy step
// copies back 12 bytes a row instead of the vocabulary's floats. The combine rule is
// row_argmax_math.h's, which the host tests hold to the sampler's choice.
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/dependent_launch.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/row_argmax_math.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ argmax::Candidate warp_best(argmax::Candidate c) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    argmax::Candidate other;
    other.value = __shfl_xor_sync(0xffffffffu, c.value, offset);
    other.index = __shfl_xor_sync(0xffffffffu, c.index, offset);
    c = argmax::combine(c, other);
  }
  return c;
}

// One block per row: each thread scans a strided part, then warps, then the block's warps.
__global__ void row_argmax_kernel(const float* logits, int64_t width, DeviceRowArgmax* out) {
  dependents_may_launch();  // a dependent launch (dependent_launch.cuh): the logits are the GEMV's
  wait_for_prerequisites();
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * width;
  argmax::Candidate best = argmax::empty_candidate();
  int32_t finite = 1;
  for (int64_t i = threadIdx.x; i < width; i += kThreads) {
    const float v = row[i];
    finite &= argmax::finite_bits(v);
    if (argmax::beats(v, static_cast<int32_t>(i), best)) best = {v, static_cast<int32_t>(i)};
  }
  best = warp_best(best);
  finite = __syncthreads_and(finite);
  __shared__ float values[kThreads / 32];
  __shared__ int32_t indices[kThreads / 32];
  if (threadIdx.x % 32 == 0) {
    values[threadIdx.x / 32] = best.value;
    indices[threadIdx.x / 32] = best.index;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    argmax::Candidate total = argmax::empty_candidate();
    for (int w = 0; w < kThreads / 32; ++w) total = argmax::combine(total, {values[w], indices[w]});
    DeviceRowArgmax result;
    // A row of NaN only: index 0, as the host's argmax answers (the row fails as non-finite).
    result.token = total.index == argmax::kNoIndex ? 0 : total.index;
    result.value = total.index == argmax::kNoIndex ? row[0] : total.value;
    result.finite = finite;
    out[blockIdx.x] = result;
  }
}

}  // namespace

void launch_row_argmax(const float* logits, int64_t width, int64_t rows, DeviceRowArgmax* out, cudaStream_t stream) {
  if (rows == 0) return;
  launch_kernel(row_argmax_kernel, static_cast<unsigned>(rows), kThreads, 0, stream, logits, width, out);
}

}  // namespace lumen::backend::cuda
