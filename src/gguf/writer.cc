#include "gguf/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::gguf {

namespace {

using Emit = std::function<void(const void*, size_t)>;

template <typename T>
void emit_pod(const Emit& emit, T value) {
  emit(&value, sizeof(T));
}

void emit_string(const Emit& emit, const std::string& text) {
  emit_pod<uint64_t>(emit, text.size());
  emit(text.data(), text.size());
}

void emit_value(const Emit& emit, const Value& value);

void emit_array(const Emit& emit, const Array& array) {
  emit_pod<uint32_t>(emit, static_cast<uint32_t>(array.element_type));
  emit_pod<uint64_t>(emit, array.length);
  if (array.element_type == ValueType::STRING) {
    for (const std::string& s : array.strings) emit_string(emit, s);
  } else if (array.element_type == ValueType::ARRAY) {
    for (const Value& nested : array.arrays) emit_array(emit, nested.as_array());
  } else {
    emit(array.raw.data(), array.raw.size());
  }
}

// Scalars are stored widened; narrow them back to the declared width.
void emit_value(const Emit& emit, const Value& value) {
  switch (value.type()) {
    case ValueType::U8: emit_pod(emit, static_cast<uint8_t>(value.as_unsigned())); break;
    case ValueType::U16: emit_pod(emit, static_cast<uint16_t>(value.as_unsigned())); break;
    case ValueType::U32: emit_pod(emit, static_cast<uint32_t>(value.as_unsigned())); break;
    case ValueType::U64: emit_pod(emit, value.as_unsigned()); break;
    case ValueType::I8: emit_pod(emit, static_cast<int8_t>(value.as_signed())); break;
    case ValueType::I16: emit_pod(emit, static_cast<int16_t>(value.as_signed())); break;
    case ValueType::I32: emit_pod(emit, static_cast<int32_t>(value.as_signed())); break;
    case ValueType::I64: emit_pod(emit, value.as_signed()); break;
    case ValueType::F32: emit_pod(emit, static_cast<float>(value.as_float())); break;
    case ValueType::F64: emit_pod(emit, value.as_float()); break;
    case ValueType::BOOL: emit_pod<uint8_t>(emit, value.as_bool() ? 1 : 0); break;
    case ValueType::STRING: emit_string(emit, value.as_string()); break;
    case ValueType::ARRAY: emit_array(emit, value.as_array()); break;
  }
}

void emit_padding(const Emit& emit, uint64_t written, uint64_t alignment) {
  static const uint8_t kZeros[kMaxAlignment > 4096 ? 4096 : kMaxAlignment] = {};
  uint64_t pad = (alignment - written % alignment) % alignment;
  while (pad > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(kZeros)));
    emit(kZeros, chunk);
    pad -= chunk;
  }
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (!is_power_of_two(alignment) || alignment > kMaxAlignment) {
    fail("GGUF alignment {} must be a power of two no larger than {}", alignment, kMaxAlignment);
  }
  if (alignment != kDefaultAlignment) metadata_.set("general.alignment", Value::u32(alignment));
}

uint64_t GgufWriter::validated_bytes(const std::string& name, tensor::DType type,
                                     const std::vector<int64_t>& dims) const {
  if (name.empty() || name.size() > kMaxTensorNameBytes) {
    fail("tensor name '{}' must be 1 to {} bytes", name, kMaxTensorNameBytes);
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) fail("duplicate tensor name '{}'", name);
  }
  if (dims.empty() || dims.size() > static_cast<size_t>(kMaxTensorDims)) {
    fail("tensor '{}' must have 1 to {} dimensions", name, kMaxTensorDims);
  }
  uint64_t rows = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] <= 0) fail("tensor '{}' dimension {} must be > 0", name, d);
    if (d > 0) {
      auto product = checked_mul(rows, static_cast<uint64_t>(dims[d]));
      if (!product) fail("tensor '{}' is too large", name);
      rows = *product;
    }
  }
  auto row = tensor::row_bytes(type, dims[0]);
  if (!row) {
    fail("tensor '{}' rows of {} are not whole blocks of {}", name, dims[0],
         tensor::dtype_name(type));
  }
  auto bytes = checked_mul(*row, rows);
  auto offset = checked_align_up(data_bytes_, alignment_);
  if (!bytes || !offset || !checked_add(*offset, *bytes)) fail("tensor '{}' is too large", name);
  return *bytes;
}

void GgufWriter::add_pending(std::string name, tensor::DType type, std::vector<int64_t> dims,
                             Fill fill) {
  uint64_t bytes = validated_bytes(name, type, dims);
  uint64_t offset = *checked_align_up(data_bytes_, alignment_);
  tensors_.push_back({std::move(name), type, std::move(dims), bytes, offset, std::move(fill)});
  data_bytes_ = offset + bytes;
}

void GgufWriter::add_tensor(std::string name, tensor::DType type, std::vector<int64_t> dims,
                            std::span<const uint8_t> data) {
  uint64_t need = validated_bytes(name, type, dims);
  if (need != data.size()) {
    fail("tensor '{}' was given {} bytes, its shape needs {}", name, data.size(), need);
  }
  auto copy = std::make_shared<const std::vector<uint8_t>>(data.begin(), data.end());
  add_pending(std::move(name), type, std::move(dims), [copy](std::span<uint8_t> out) {
    std::memcpy(out.data(), copy->data(), out.size());
  });
}

void GgufWriter::add_tensor(std::string name, tensor::DType type, std::vector<int64_t> dims,
                            Fill fill) {
  add_pending(std::move(name), type, std::move(dims), std::move(fill));
}

void GgufWriter::serialize(const Emit& emit) const {
  uint64_t written = 0;
  Emit counted = [&](const void* data, size_t size) {
    emit(data, size);
    written += size;
  };
  emit_pod<uint32_t>(counted, 0x46554747);  // "GGUF"
  emit_pod<uint32_t>(counted, 3);
  emit_pod<uint64_t>(counted, tensors_.size());
  emit_pod<uint64_t>(counted, metadata_.size());
  for (const auto& [key, value] : metadata_.entries()) {
    emit_string(counted, key);
    emit_pod<uint32_t>(counted, static_cast<uint32_t>(value.type()));
    emit_value(counted, value);
  }
  for (const PendingTensor& t : tensors_) {
    emit_string(counted, t.name);
    emit_pod<uint32_t>(counted, static_cast<uint32_t>(t.dims.size()));
    for (int64_t dim : t.dims) emit_pod<int64_t>(counted, dim);
    emit_pod<uint32_t>(counted, static_cast<uint32_t>(t.type));
    emit_pod<uint64_t>(counted, t.offset);
  }
  if (tensors_.empty()) return;
  emit_padding(counted, written, alignment_);
  uint64_t data_start = written;
  std::vector<uint8_t> buffer;
  for (const PendingTensor& t : tensors_) {
    emit_padding(counted, written - data_start, alignment_);
    buffer.assign(static_cast<size_t>(t.bytes), 0);
    t.fill(buffer);
    counted(buffer.data(), buffer.size());
  }
  emit_padding(counted, written - data_start, alignment_);  // the last tensor is padded too
}

std::vector<uint8_t> GgufWriter::write_to_memory() const {
  std::vector<uint8_t> out;
  serialize([&](const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    out.insert(out.end(), bytes, bytes + size);
  });
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::string temp = path + ".tmp";
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(temp.c_str(), "wb"), &std::fclose);
  if (!file) fail("cannot create '{}': {}", temp, std::strerror(errno));
  try {
    serialize([&](const void* data, size_t size) {
      if (size > 0 && std::fwrite(data, 1, size, file.get()) != size) {
        fail("cannot write '{}': {}", temp, std::strerror(errno));
      }
    });
    if (std::fclose(file.release()) != 0) fail("cannot write '{}': {}", temp, std::strerror(errno));
  } catch (...) {
    file.reset();
    std::remove(temp.c_str());
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(temp.c_str());
    fail("cannot rename '{}' to '{}': {}", temp, path, std::strerror(err));
  }
}

}  // namespace lumen::gguf
