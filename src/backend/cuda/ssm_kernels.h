#pragma once
// Internal to the CUDA backend: the launchers of ssm.cu (Mamba 2's convolution and scan; the
// arithmetic is ssm_math.h's). `seqs` is a device array of n_seqs descriptors; the argument
// pointers are device pointers.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/ssm_math.h"

namespace lumen::backend::cuda {

void launch_ssm_conv(const SsmConvArgs& args, const SsmSeqDesc* seqs, int64_t n_seqs, cudaStream_t stream);
// args.state_size at most kSsmMaxState.
void launch_ssm_scan(const SsmScanArgs& args, const SsmSeqDesc* seqs, int64_t n_seqs, cudaStream_t stream);

}  // namespace lumen::backend::cuda
