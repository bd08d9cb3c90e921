#pragma once
// What Linux reports about the machine's memory (/proc/meminfo), for budgets sized from the RAM
// a process can still take: the engine's KV pool (engine/kv_budget.h) and the CPU backend's
// packed weights (backend/cpu/pack_budget.h).
#include <cstdint>

namespace lumen {

// MemAvailable: free memory plus what the kernel can reclaim without swapping (the page cache,
// a mapped file's clean pages), in bytes; 0 when it cannot be read.
uint64_t available_ram_bytes();

// MemTotal, in bytes; 0 when it cannot be read.
uint64_t total_ram_bytes();

}  // namespace lumen
