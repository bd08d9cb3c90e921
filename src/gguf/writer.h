#pragma once
// Writes GGUF version 3 files that Lumen's reader, llama.cpp and gguf-py all accept. Tensors
// can be given as bytes or as a fill callback that produces them when the file is written,
// so `lumen synth` can emit an 8B-parameter model without holding it all in memory.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/metadata.h"
#include "tensor/dtype.h"

namespace lumen::gguf {

class GgufWriter {
 public:
  using Fill = std::function<void(std::span<uint8_t> out)>;

  // An alignment other than the default is recorded as general.alignment (u32).
  explicit GgufWriter(uint32_t alignment = kDefaultAlignment);

  Metadata& metadata() { return metadata_; }

  // Both throw lumen::Error for a name or shape the reader would reject.
  void add_tensor(std::string name, tensor::DType type, std::vector<int64_t> dims,
                  std::span<const uint8_t> data);
  void add_tensor(std::string name, tensor::DType type, std::vector<int64_t> dims, Fill fill);

  // Writes to `path` through a temporary file renamed into place, so a failed write never
  // leaves a half-written model under the final name.
  void write(const std::string& path) const;
  std::vector<uint8_t> write_to_memory() const;

 private:
  struct PendingTensor {
    std::string name;
    tensor::DType type;
    std::vector<int64_t> dims;
    uint64_t bytes;
    uint64_t offset;
    Fill fill;
  };
  uint64_t validated_bytes(const std::string& name, tensor::DType type,
                           const std::vector<int64_t>& dims) const;
  void add_pending(std::string name, tensor::DType type, std::vector<int64_t> dims, Fill fill);
  void serialize(const std::function<void(const void*, size_t)>& emit) const;

  uint32_t alignment_;
  Metadata metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t data_bytes_ = 0;
};

}  // namespace lumen::gguf
