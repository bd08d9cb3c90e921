#include "util/system_memory.h"

#include <fstream>
#include <string>
#include <string_view>

namespace lumen {

namespace {

// The value of one "Key: N kB" line of /proc/meminfo, in bytes; 0 when there is none.
uint64_t meminfo_bytes(std::string_view wanted) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (meminfo >> key >> value >> unit) {
    if (key == wanted) return value * 1024;
  }
  return 0;
}

}  // namespace

uint64_t available_ram_bytes() { return meminfo_bytes("MemAvailable:"); }

uint64_t total_ram_bytes() { return meminfo_bytes("MemTotal:"); }

}  // namespace lumen
