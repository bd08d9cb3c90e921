#pragma once
// Internal to the CUDA backend: several host arrays packed into one byte blob for a single
// upload (HostUploads), each starting 16-byte aligned so any record type can be read in place.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace lumen::backend::cuda {

inline size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

// Appends `values` at the next 16-byte boundary; returns where they start.
template <typename T>
size_t append(std::vector<uint8_t>& blob, const std::vector<T>& values) {
  const size_t offset = align16(blob.size());
  blob.resize(offset + values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(blob.data() + offset, values.data(), values.size() * sizeof(T));
  return offset;
}

}  // namespace lumen::backend::cuda
