#include "gguf/file.h"

#include <algorithm>
#include <limits>

#include "gguf/byte_cursor.h"
#include "gguf/value_reader.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

// Smallest possible encodings, used to bound counts by the bytes actually present.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;               // key length, 1-byte key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, 1 dim, type, offset

void read_header(ByteCursor& cursor, uint32_t& version, uint64_t& n_tensors, uint64_t& n_kv) {
  if (cursor.size() == 0) fail("empty file, not a GGUF model");
  uint32_t magic = cursor.read<uint32_t>("magic");
  if (magic != kMagic) fail("not a GGUF file (bad magic 0x{:08x})", magic);
  version = cursor.read<uint32_t>("version");
  if (version == 0x02000000 || version == 0x03000000) {
    fail("GGUF version is byte-swapped: a big-endian file, which Lumen does not read");
  }
  if (version == 1) fail("GGUF version 1 is obsolete and unsupported (need 2 or 3)");
  if (version != 2 && version != 3) fail("unsupported GGUF version {} (need 2 or 3)", version);
  n_tensors = cursor.read<uint64_t>("tensor count");
  n_kv = cursor.read<uint64_t>("metadata count");
  if (n_kv > cursor.remaining() / kMinKvBytes) {
    fail("metadata count {} cannot fit in the {} bytes left", n_kv, cursor.remaining());
  }
}

void read_metadata(ByteCursor& cursor, uint64_t n_kv, Metadata& metadata) {
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = cursor.read_string("metadata key");
    if (key.empty()) fail("metadata entry {} has an empty key", i);
    if (metadata.contains(key)) fail("duplicate metadata key '{}'", key);
    ValueType type = read_value_type(cursor, key);
    Value value = read_value(cursor, type, key);
    metadata.set(std::move(key), std::move(value));
  }
}

uint32_t read_alignment(const Metadata& metadata) {
  const Value* value = metadata.find("general.alignment");
  if (value == nullptr) return kDefaultAlignment;
  if (value->type() != ValueType::U32) {
    fail("general.alignment has type {}, must be u32", value_type_name(value->type()));
  }
  uint64_t alignment = value->as_unsigned();
  if (!is_power_of_two(alignment)) fail("general.alignment {} is not a power of two", alignment);
  if (alignment > kMaxAlignment) {
    fail("general.alignment {} exceeds the limit of {}", alignment, kMaxAlignment);
  }
  return static_cast<uint32_t>(alignment);
}

TensorInfo read_tensor_info(ByteCursor& cursor, uint32_t alignment) {
  TensorInfo info;
  info.name = cursor.read_string("tensor name");
  if (info.name.empty()) fail("a tensor has an empty name");
  if (info.name.size() > kMaxTensorNameBytes) {
    fail("tensor name '{}...' is {} bytes, the limit is {}", info.name.substr(0, 32),
         info.name.size(), kMaxTensorNameBytes);
  }
  const std::string& name = info.name;

  uint32_t n_dims = cursor.read<uint32_t>("tensor dimension count");
  if (n_dims < 1 || n_dims > kMaxTensorDims) {
    fail("tensor '{}' has {} dimensions (must be 1 to {})", name, n_dims, kMaxTensorDims);
  }
  int64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    int64_t dim = cursor.read<int64_t>("tensor dimension");
    if (dim <= 0) fail("tensor '{}' dimension {} is {} (must be > 0)", name, d, dim);
    auto product = checked_mul(elements, dim);
    if (!product) fail("tensor '{}' element count overflows", name);
    elements = *product;
    info.dims.push_back(dim);
  }
  info.elements = elements;

  uint32_t raw_type = cursor.read<uint32_t>("tensor type");
  const tensor::DTypeInfo* type = tensor::dtype_info(raw_type);
  if (type == nullptr) fail("tensor '{}' has unknown or removed type {}", name, raw_type);
  info.type = type->type;
  if (info.dims[0] % type->block_elements != 0) {
    fail("tensor '{}' rows of {} elements are not whole {} blocks of {}", name, info.dims[0],
         type->name, type->block_elements);
  }
  auto row = tensor::row_bytes(info.type, info.dims[0]);
  auto total = row ? checked_mul(*row, static_cast<uint64_t>(elements / info.dims[0]))
                   : std::nullopt;
  if (!total || *total > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail("tensor '{}' byte size overflows", name);
  }
  info.bytes = *total;

  info.offset = cursor.read<uint64_t>("tensor offset");
  if (info.offset % alignment != 0) {
    fail("tensor '{}' offset {} is not a multiple of the alignment {}", name, info.offset,
         alignment);
  }
  return info;
}

// Checks every tensor lies inside the data section and no two share bytes.
// Like ggml, each tensor's padding to the alignment is part of the file: a file cut anywhere,
// even inside the last tensor's padding, is rejected as truncated.
void check_layout(const std::vector<TensorInfo>& tensors, uint64_t data_bytes,
                  uint32_t alignment) {
  for (const TensorInfo& t : tensors) {
    auto end = checked_add(t.offset, t.bytes);
    if (end) end = checked_align_up(*end, alignment);
    if (!end || *end > data_bytes) {
      fail("tensor '{}' (offset {}, {} bytes, padded) extends past the end of the file's data "
           "({} bytes)",
           t.name, t.offset, t.bytes, data_bytes);
    }
  }
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors.size());
  for (const TensorInfo& t : tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    if (prev.offset + prev.bytes > by_offset[i]->offset) {
      fail("tensors '{}' and '{}' overlap", prev.name, by_offset[i]->name);
    }
  }
}

}  // namespace

void GgufFile::parse_bytes(std::span<const uint8_t> bytes) {
  ByteCursor cursor(bytes);
  file_size_ = bytes.size();
  uint64_t n_tensors = 0, n_kv = 0;
  read_header(cursor, version_, n_tensors, n_kv);
  read_metadata(cursor, n_kv, metadata_);
  alignment_ = read_alignment(metadata_);

  if (n_tensors > cursor.remaining() / kMinTensorInfoBytes) {
    fail("tensor count {} cannot fit in the {} bytes left", n_tensors, cursor.remaining());
  }
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo info = read_tensor_info(cursor, alignment_);
    if (tensor_index_.count(info.name) != 0) fail("duplicate tensor name '{}'", info.name);
    tensor_index_.emplace(info.name, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  auto data_offset = checked_align_up(cursor.position(), alignment_);
  if (!data_offset) fail("data section offset overflows");
  data_offset_ = *data_offset;
  if (tensors_.empty()) return;  // a vocab-only file need not be padded
  if (data_offset_ > file_size_) {
    fail("file ends at {} bytes, before its tensor data starts at {}", file_size_, data_offset_);
  }
  check_layout(tensors_, file_size_ - data_offset_, alignment_);
  for (TensorInfo& t : tensors_) t.data = bytes.data() + data_offset_ + t.offset;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, std::string source_name) {
  GgufFile file;
  file.source_name_ = std::move(source_name);
  try {
    file.parse_bytes(bytes);
  } catch (const Error& e) {
    fail("{}: {}", file.source_name_, e.what());
  }
  return file;
}

GgufFile GgufFile::open(const std::string& path) {
  MappedFile mapping(path);
  GgufFile file = parse(mapping.bytes(), path);
  file.mapping_.emplace(std::move(mapping));  // data pointers stay valid: the map does not move
  return file;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  const TensorInfo* info = find_tensor(name);
  if (info == nullptr) fail("{}: missing tensor '{}'", source_name_, name);
  return *info;
}

}  // namespace lumen::gguf
