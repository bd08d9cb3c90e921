#pragma once
// A parsed, validated GGUF file (versions 2 and 3). Parsing checks everything before trusting
// it: sizes with overflow checks, counts bounded by the bytes actually present before anything
// is allocated, offsets inside the file and aligned, tensors not overlapping, dimensions > 0
// and whole blocks, known types only. A file that passes can be used without further checks.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/metadata.h"
#include "tensor/dtype.h"
#include "util/mapped_file.h"

namespace lumen::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxAlignment = 1u << 20;     // past a MiB it is hostile, not useful
inline constexpr size_t kMaxTensorNameBytes = 63;        // ggml's limit: 64 with the NUL
inline constexpr int kMaxTensorDims = 4;
inline constexpr int kMaxArrayNesting = 8;               // the spec allows nesting; bound it

struct TensorInfo {
  std::string name;
  tensor::DType type;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the row length (contiguous)
  uint64_t offset = 0;        // from the start of the data section
  uint64_t bytes = 0;
  int64_t elements = 0;
  const uint8_t* data = nullptr;  // into the file's bytes

  int64_t rows() const { return elements / dims[0]; }
  std::span<const uint8_t> span() const { return {data, static_cast<size_t>(bytes)}; }
};

class GgufFile {
 public:
  // Maps and parses a file. Throws lumen::Error "<path>: <what was wrong>".
  static GgufFile open(const std::string& path);
  // Parses bytes the caller keeps alive for the GgufFile's lifetime (tests, fuzzing).
  static GgufFile parse(std::span<const uint8_t> bytes, std::string source_name = "<memory>");

  const std::string& source_name() const { return source_name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return file_size_; }
  const Metadata& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  const TensorInfo* find_tensor(std::string_view name) const;
  // Throws lumen::Error naming the missing tensor.
  const TensorInfo& tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  void parse_bytes(std::span<const uint8_t> bytes);

  std::optional<MappedFile> mapping_;
  std::string source_name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  uint64_t file_size_ = 0;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace lumen::gguf
