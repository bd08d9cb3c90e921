// Mamba 2's convolution and selective scan on the device: the thread mapping around
// ssm_math.h's functions, which hold all the arithmetic and indexing (tested on the host).
#include "backend/cuda/ssm_kernels.h"

namespace lumen::backend::cuda {

namespace {

constexpr int kConvThreads = 256;
// The scan: kSsmLanes threads per channel, this many channels per block.
constexpr int kScanChannelsPerBlock = 16;
constexpr int kScanThreads = kScanChannelsPerBlock * kSsmLanes;
// grid.y carries the sequence; a batch with more sequences is launched in parts.
constexpr int64_t kMaxGridY = 65535;

// One thread per channel of sequence blockIdx.y (of the part starting at seqs).
__global__ void __launch_bounds__(kConvThreads) ssm_conv_kernel(SsmConvArgs args, const SsmSeqDesc* seqs) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= args.channels) return;
  ssm_conv_channel(args, seqs[blockIdx.y], c);
}

// kSsmLanes consecutive threads per channel of sequence blockIdx.y; each keeps its share of the
// channel's state in registers from the first token to the last. Every thread of a warp runs the
// same number of tokens (one sequence per block), so the shuffles see all 32 lanes.
__global__ void __launch_bounds__(kScanThreads) ssm_scan_kernel(SsmScanArgs args, const SsmSeqDesc* seqs) {
  const SsmSeqDesc s = seqs[blockIdx.y];
  const int lane = static_cast<int>(threadIdx.x % kSsmLanes);
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kScanChannelsPerBlock + threadIdx.x / kSsmLanes;
  const bool active = i < args.inner;
  float h[kSsmMaxPerLane] = {};
  if (active) ssm_load_lane(args, s, i, lane, h);
  for (int64_t t = 0; t < s.n_tokens; ++t) {
    float partial = 0.0f;
    if (active) partial = ssm_scan_lane(args, s, t, i, lane, ssm_token_step(args, s, t, i / args.head_dim), h);
    float partials[kSsmLanes];
#pragma unroll
    for (int l = 0; l < kSsmLanes; ++l) partials[l] = __shfl_sync(0xffffffffu, partial, l, kSsmLanes);
    if (active && lane == 0) args.y[(s.first_token + t) * args.y_stride + i] = ssm_combine(args, s, t, i, partials);
  }
  if (active) ssm_store_lane(args, s, i, lane, h);
}

// launch(first sequence, sequences in grid.y) for each part of at most kMaxGridY sequences.
template <typename Launch>
void in_sequence_parts(int64_t n_seqs, Launch launch) {
  for (int64_t first = 0; first < n_seqs; first += kMaxGridY) {
    launch(first, static_cast<unsigned>(n_seqs - first < kMaxGridY ? n_seqs - first : kMaxGridY));
  }
}

}  // namespace

void launch_ssm_conv(const SsmConvArgs& args, const SsmSeqDesc* seqs, int64_t n_seqs, cudaStream_t stream) {
  if (args.channels == 0) return;
  const auto blocks = static_cast<unsigned>((args.channels + kConvThreads - 1) / kConvThreads);
  in_sequence_parts(n_seqs, [&](int64_t first, unsigned part) {
    ssm_conv_kernel<<<dim3(blocks, part), kConvThreads, 0, stream>>>(args, seqs + first);
  });
}

void launch_ssm_scan(const SsmScanArgs& args, const SsmSeqDesc* seqs, int64_t n_seqs, cudaStream_t stream) {
  if (args.inner == 0) return;
  const auto blocks = static_cast<unsigned>((args.inner + kScanChannelsPerBlock - 1) / kScanChannelsPerBlock);
  in_sequence_parts(n_seqs, [&](int64_t first, unsigned part) {
    ssm_scan_kernel<<<dim3(blocks, part), kScanThreads, 0, stream>>>(args, seqs + first);
  });
}

}  // namespace lumen::backend::cuda
