#pragma once
// What the decode tests on the CUDA backend over a tiny synthetic model need (a device, real or
// simulated, and the test vocabulary): the reason to skip when one is missing, nullopt when both
// are there. A skip then means nothing could run.
#include <filesystem>
#include <optional>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "tiny_decode_sequence.h"

namespace lumen::testing {

inline std::optional<std::string> missing_cuda_decode_prerequisite() {
  if (backend::cuda_device_count() == 0) return "no CUDA device";
  if (!std::filesystem::exists(tiny_llama_vocabulary())) return "no vocabulary at " + tiny_llama_vocabulary();
  return std::nullopt;
}

}  // namespace lumen::testing
