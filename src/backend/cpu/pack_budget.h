#pragma once
// Whether the CPU backend may pack one more weight matrix (matmul_packed.h) in the memory left.
//
// Why. A packed copy is anonymous memory: without swap the kernel can never take it back. The
// file's pages it replaces are page cache, which the kernel drops whenever memory runs short
// (they are read again on the next use). So packing trades reclaimable memory for memory that
// is not, and on a machine the model nearly fills (gpt-oss-20b's 12 GB on a 16 GB laptop) packing
// everything would leave no room for what the process has been promised but not yet touched:
// the KV pool, mapped lazily and sized from the RAM available when the engine was made
// (engine/kv_budget.h). When it fills, the process would be killed instead of reading a few file
// pages again. So a matrix is packed only while the memory available (MemAvailable: free plus
// reclaimable) covers the packed copy, every lazily mapped buffer of the backend in full (as if
// already touched), and a reserve for everything else (1/16 of the RAM, at least 256 MiB). A
// matrix left unpacked runs the file-layout kernels: the same results (PackedMatmulTest), slower.
#include <cstdint>

namespace lumen::backend::cpu {

struct PackBudget {
  uint64_t available = 0;  // MemAvailable; 0: unknown (not Linux), and then packing is allowed
  uint64_t total = 0;      // MemTotal
  uint64_t promised = 0;   // the backend's lazily mapped buffers, in full

  static constexpr uint64_t kMinReserve = uint64_t{256} << 20;

  uint64_t reserve() const { return total / 16 > kMinReserve ? total / 16 : kMinReserve; }
  bool allows(uint64_t packed_bytes) const {
    return available == 0 || available >= packed_bytes + promised + reserve();
  }
};

}  // namespace lumen::backend::cpu
