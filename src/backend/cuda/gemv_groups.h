#pragma once
// Internal to the CUDA backend: which outputs of one input (matmul_same_input's Q/K/V, matmul_glu's
// gate/up) run as one tiled GEMV launch (CudaBackendOptions::grouped_gemv).
//
// A launch can take several matrices when they share the weight type (so one kernel
// instantiation and one activation type) and the row width in bytes (so one row stride), and
// each can take the tiled kernel at all. The rest run alone, as without grouping. Host-only, so
// tests/unit/cuda_host checks it without a GPU.
#include <cstddef>
#include <span>
#include <vector>

#include "tensor/dtype.h"

namespace lumen::backend::cuda {

struct GemvGroupCandidate {
  tensor::DType type = tensor::DType::F32;
  size_t row_bytes = 0;
  // The tiled kernel can run it: a quantized type it is chosen for, weights and output in device
  // memory at 16-byte boundaries, few enough tokens for the GEMV.
  bool groupable = false;
};

// Launches for `outputs`, as indices into it: each launch's outputs in their order, the launches
// in the order of their first output. Outputs that can share a launch are together, at most
// max_per_launch to one; every other output is a launch of its own. Every index appears once.
std::vector<std::vector<size_t>> gemv_launch_groups(std::span<const GemvGroupCandidate> outputs, size_t max_per_launch);

}  // namespace lumen::backend::cuda
