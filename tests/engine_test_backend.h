#pragma once
// The backend an engine test runs on: the CPU's, or, in the CUDA builds of the engine tests
// (LUMEN_ENGINE_TESTS_ON_CUDA: cuda_engine_tests on a GPU, scripts/gpu_check.sh engine;
// sim_engine_tests on the simulated device, scripts/cuda_sim_check.sh --engine), the CUDA
// backend with every matmul on the GEMV kernels and every attention row on the split-KV kernels
// (not the tensor-core prefill, which takes a sequence's chunk of 16 rows or more and rounds its
// probabilities to f16). Then a token's result does not depend on its batch or on how its prompt
// was chunked (CudaMatmulInvariance, CudaAttention.EachTokenAloneGivesItsBatchRowExactly), which
// is what these tests compare, exactly. (LUMEN_CUDA_* variables still override both, for
// bisecting.) Null where that build finds no CUDA device: the tests then skip.
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#if defined(LUMEN_ENGINE_TESTS_ON_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace lumen::testing {

inline backend::Backend* make_engine_test_backend() {
#if defined(LUMEN_ENGINE_TESTS_ON_CUDA)
  if (backend::cuda_device_count() == 0) return nullptr;
  backend::CudaBackendOptions options;
  options.max_gemv_tokens = int64_t{1} << 20;
  options.tensor_core_prefill = false;
  return new backend::CudaBackend(0, options);
#else
  return new backend::CpuBackend(2);
#endif
}

}  // namespace lumen::testing
