// Sampled rows' reduction on the device (kernels.h, "row_leading.cu"): a row whose draw is
// confined by top-k, top-p or min-p becomes its 64 most likely tokens, whether it is all finite
// and, when asked, its total weight at the sampler's temperature, so a step copies back about
// 540 bytes a row instead of the vocabulary's floats. The selection is row_leading_math.h's
// radix select, which the host tests replay against the sampler's own.
#include "backend/cuda/kernels.h"
#include "backend/cuda/row_argmax_math.h"
#include "backend/cuda/row_leading_math.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kCandidates = leading::kCandidates;

// The online total of exp((v - m) * scale): (m, s) pairs combined at the larger m.
__device__ __forceinline__ void combine_total(float& m, double& s, float other_m, double other_s, float scale) {
  const float top = fmaxf(m, other_m);
  double sum = 0.0;
  if (s != 0.0) sum += s * static_cast<double>(expf((m - top) * scale));
  if (other_s != 0.0) sum += other_s * static_cast<double>(expf((other_m - top) * scale));
  m = top;
  s = sum;
}

// One block per requested row.
__global__ void __launch_bounds__(kThreads)
    row_leading_kernel(const float* logits, int64_t width, const DeviceLeadingRequest* requests,
                       DeviceRowLeading* out) {
  const DeviceLeadingRequest request = requests[blockIdx.x];
  const float* row = logits + static_cast<int64_t>(request.row) * width;
  const float scale = request.scale;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const auto k = static_cast<uint32_t>(width < kCandidates ? width : kCandidates);

  __shared__ uint32_t histogram[leading::kMaxBins];
  __shared__ uint32_t chosen_prefix, chosen_need;
  __shared__ float warp_m[kWarps];
  __shared__ double warp_s[kWarps];
  __shared__ double row_total;
  __shared__ uint32_t keys[kCandidates];
  __shared__ int32_t indices[kCandidates];
  __shared__ float values[kCandidates];
  __shared__ uint32_t warp_equal[kWarps];
  __shared__ uint32_t n_above, n_equal_seen;
  __shared__ int done;

  // The three histogram passes; the first also finds whether the row is finite and its total.
  int finite = 1;
  float m = -INFINITY;
  double s = 0.0;
  uint32_t prefix = 0, need = k;
  for (int pass = 0; pass < leading::kPasses; ++pass) {
    const int bins = leading::digit_bins(pass);
    for (int b = tid; b < bins; b += kThreads) histogram[b] = 0;
    __syncthreads();
    const uint32_t mask = leading::prefix_mask(pass);
    for (int64_t i = tid; i < width; i += kThreads) {
      const float v = row[i];
      if (pass == 0) {
        const int32_t ok = argmax::finite_bits(v);
        finite &= ok;
        if (scale != 0.0f && ok != 0) {
          if (v > m) {
            s = s * static_cast<double>(expf((m - v) * scale)) + 1.0;
            m = v;
          } else {
            s += static_cast<double>(expf((v - m) * scale));
          }
        }
      }
      const uint32_t key = leading::key_of(v);
      if ((key & mask) == prefix) atomicAdd(&histogram[leading::digit_of(key, pass)], 1u);
    }
    __syncthreads();
    if (warp == 0) {
      // Lane l sums the bins l-th from the top; the first lane whose running sum reaches `need`
      // finds the bin among its own.
      const int per_lane = bins / 32;
      const int first = leading::lane_first_bin(lane, bins);
      uint32_t sum = 0;
      for (int b = first; b < first + per_lane; ++b) sum += histogram[b];
      uint32_t running = sum;
      for (int offset = 1; offset < 32; offset <<= 1) {
        const uint32_t other = __shfl_up_sync(kFullMask, running, offset);
        if (lane >= offset) running += other;
      }
      const unsigned reached = __ballot_sync(kFullMask, running >= need);
      if (lane == __ffs(static_cast<int>(reached)) - 1) {
        const leading::BinChoice choice = leading::choose_bin_in_lane(histogram, bins, lane, running - sum, need);
        chosen_prefix = prefix | (choice.bin << leading::digit_shift(pass));
        chosen_need = need - choice.above;
      }
    }
    __syncthreads();
    prefix = chosen_prefix;
    need = chosen_need;
  }
  const int row_finite = __syncthreads_and(finite);
  if (scale != 0.0f) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      combine_total(m, s, __shfl_xor_sync(kFullMask, m, offset), __shfl_xor_sync(kFullMask, s, offset), scale);
    }
    if (lane == 0) {
      warp_m[warp] = m;
      warp_s[warp] = s;
    }
    __syncthreads();
    if (tid == 0) {
      float total_m = -INFINITY;
      double total_s = 0.0;
      for (int w = 0; w < kWarps; ++w) combine_total(total_m, total_s, warp_m[w], warp_s[w], scale);
      row_total = total_s;  // at total_m, the row's largest finite value
    }
  }

  // The keys above the threshold key (atomically placed: the sort orders them) and, in index
  // order, the first `need` equal to it.
  const uint32_t threshold = prefix;
  const uint32_t above = k - need;
  if (tid == 0) {
    n_above = 0;
    n_equal_seen = 0;
    done = 0;
  }
  __syncthreads();
  for (int64_t start = 0; start < width; start += kThreads) {
    const int64_t i = start + tid;
    uint32_t key = 0;
    float v = 0.0f;
    if (i < width) {
      v = row[i];
      key = leading::key_of(v);
    }
    const bool greater = i < width && key > threshold;
    const bool equal = i < width && key == threshold;
    if (greater) {
      const uint32_t slot = atomicAdd(&n_above, 1u);
      keys[slot] = key;
      indices[slot] = static_cast<int32_t>(i);
      values[slot] = v;
    }
    const unsigned ballot = __ballot_sync(kFullMask, equal);
    if (lane == 0) warp_equal[warp] = static_cast<uint32_t>(__popc(ballot));
    __syncthreads();
    if (equal) {
      uint32_t rank = n_equal_seen + static_cast<uint32_t>(__popc(ballot & ((1u << lane) - 1u)));
      for (int w = 0; w < warp; ++w) rank += warp_equal[w];
      if (rank < need) {
        keys[above + rank] = key;
        indices[above + rank] = static_cast<int32_t>(i);
        values[above + rank] = v;
      }
    }
    __syncthreads();
    if (tid == 0) {
      for (int w = 0; w < kWarps; ++w) n_equal_seen += warp_equal[w];
      done = n_equal_seen >= need && n_above >= above ? 1 : 0;
    }
    __syncthreads();
    if (done != 0) break;
  }

  // Padding after the real entries of a short row, then the sampler's order.
  if (tid >= static_cast<int>(k) && tid < kCandidates) {
    keys[tid] = leading::kPadKey;
    indices[tid] = leading::kPadIndex;
    values[tid] = 0.0f;
  }
  __syncthreads();
  for (int stage = 2; stage <= kCandidates; stage <<= 1) {
    for (int j = stage / 2; j > 0; j /= 2) {
      if (tid < kCandidates) leading::bitonic_step(keys, indices, values, tid, stage, j);
      __syncthreads();
    }
  }
  DeviceRowLeading& result = out[blockIdx.x];
  if (tid < static_cast<int>(k)) {
    result.ids[tid] = indices[tid];
    result.logits[tid] = values[tid];
  }
  if (tid == 0) {
    result.count = static_cast<int32_t>(k);
    result.finite = row_finite;
    result.total = scale != 0.0f ? row_total : 0.0;
  }
}

}  // namespace

void launch_row_leading(const float* logits, int64_t width, const DeviceLeadingRequest* requests, int64_t n_requests,
                        DeviceRowLeading* out, cudaStream_t stream) {
  if (n_requests == 0 || width == 0) return;
  row_leading_kernel<<<static_cast<unsigned>(n_requests), kThreads, 0, stream>>>(logits, width, requests, out);
}

}  // namespace lumen::backend::cuda
