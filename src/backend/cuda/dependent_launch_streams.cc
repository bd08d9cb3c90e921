#include "backend/cuda/dependent_launch_streams.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace lumen::backend::cuda {

namespace {

// A backend has one stream and a process a few backends: a short list, read under a lock on
// every launch (tens of nanoseconds against a launch's microseconds; a replayed step reads it
// not at all).
std::mutex streams_mutex;
std::vector<const void*> streams;

}  // namespace

void set_dependent_launch(const void* stream, bool on) {
  const std::lock_guard lock(streams_mutex);
  const auto at = std::find(streams.begin(), streams.end(), stream);
  if (on && at == streams.end()) streams.push_back(stream);
  if (!on && at != streams.end()) streams.erase(at);
}

bool dependent_launch(const void* stream) {
  if (stream == nullptr) return false;
  const std::lock_guard lock(streams_mutex);
  return std::find(streams.begin(), streams.end(), stream) != streams.end();
}

}  // namespace lumen::backend::cuda
