#pragma once
// Context shift on the CPU: rotating cached keys by a position delta (Backend::shift_keys).
#include <cstdint>
#include <span>

#include "backend/backend.h"

namespace lumen::backend::cpu {

void shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                int64_t head_dim);

}  // namespace lumen::backend::cpu
