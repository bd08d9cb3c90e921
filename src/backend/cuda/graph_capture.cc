#include "backend/cuda/graph_capture.h"

#include <atomic>
#include <string>

namespace lumen::backend::cuda {

namespace {

thread_local bool g_capturing = false;
std::atomic<uint64_t> g_allocation_epoch{0};

}  // namespace

bool capturing() { return g_capturing; }

void set_capturing(bool on) { g_capturing = on; }

void refuse_in_capture(const char* what) {
  if (g_capturing) throw CaptureUnsafe(std::string(what) + " cannot be recorded in a CUDA graph");
}

uint64_t allocation_epoch() { return g_allocation_epoch.load(std::memory_order_relaxed); }

void advance_allocation_epoch() { g_allocation_epoch.fetch_add(1, std::memory_order_relaxed); }

}  // namespace lumen::backend::cuda
