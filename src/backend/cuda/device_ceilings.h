#pragma once
// A CUDA device's limits, measured (Backend::measure_device_ceilings): what `lumen bench profile
// --device cuda` puts each op's achieved rate under.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace lumen::backend::cuda {

// About a second; allocates and frees about 1 GiB of device memory.
DeviceCeilings measure_device_ceilings(int device, cudaStream_t stream, cublasHandle_t cublas);

}  // namespace lumen::backend::cuda
