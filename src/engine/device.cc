#include "engine/device.h"

#include "backend/cpu/cpu_backend.h"
#include "util/error.h"
#ifdef LUMEN_HAS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace lumen::engine {

std::unique_ptr<backend::Backend> make_backend(const std::string& device, unsigned threads) {
  if (device == "cpu") return std::make_unique<backend::CpuBackend>(threads);
  if (device == "cuda" || device.starts_with("cuda:")) {
    int index = 0;
    if (device != "cuda") {  // "cuda:" then digits ("cuda:" alone is malformed, not device 0)
      const std::string digits = device.substr(5);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 4) {
        fail("device '{}' is not cuda:N", device);
      }
      index = std::stoi(digits);
    }
#ifdef LUMEN_HAS_CUDA
    return backend::make_cuda_backend(index);
#else
    (void)index;
    fail("device {}: this build has no CUDA backend (configure with -DLUMEN_CUDA=ON)", device);
#endif
  }
  fail("unknown device '{}' (cpu, cuda or cuda:N)", device);
}

}  // namespace lumen::engine
