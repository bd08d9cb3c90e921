#pragma once
// A read-only memory map of a whole file. Model weights are used straight from the map, so a
// 5 GB model costs no copy and no load time beyond page faults.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace lumen {

class MappedFile {
 public:
  // Throws lumen::Error naming the path and the OS error when the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lumen
