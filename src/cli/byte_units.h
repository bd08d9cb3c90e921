#pragma once
// Byte counts as the CLI's reports print them.
#include <cstdint>

namespace lumen::cli {

inline double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace lumen::cli
