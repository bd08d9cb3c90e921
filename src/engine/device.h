#pragma once
// The backend a device name stands for: "cpu" (threads: its pool; 0: one per core), "cuda" or
// "cuda:N" in a build with -DLUMEN_CUDA=ON.
#include <memory>
#include <string>

#include "backend/backend.h"

namespace lumen::engine {

// Throws lumen::Error for an unknown device, a CUDA device in a build without CUDA, or a CUDA
// device that does not exist.
std::unique_ptr<backend::Backend> make_backend(const std::string& device, unsigned threads);

}  // namespace lumen::engine
