#include "quantize/imatrix_file.h"

#include <cmath>
#include <cstring>
#include <span>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";

bool strip_suffix(std::string& name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  name.resize(name.size() - suffix.size());
  return true;
}

std::vector<float> f32_values(const gguf::TensorInfo& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.elements));
  std::memcpy(values.data(), tensor.data, values.size() * sizeof(float));
  return values;
}

void check_f32_2d(const std::string& path, const gguf::TensorInfo& tensor) {
  if (tensor.type != tensor::DType::F32) {
    fail("{}: imatrix tensor '{}' is {}, not F32", path, tensor.name, tensor::dtype_name(tensor.type));
  }
  if (tensor.dims.size() > 2) fail("{}: imatrix tensor '{}' has {} dimensions, not 2", path, tensor.name, tensor.dims.size());
}

ImatrixEntry read_entry(const std::string& path, const std::string& name, const gguf::TensorInfo* sums,
                        const gguf::TensorInfo* counts) {
  if (sums == nullptr || counts == nullptr) {
    fail("{}: '{}' has {} but no {} tensor", path, name, sums ? kSumsSuffix : kCountsSuffix,
         sums ? kCountsSuffix : kSumsSuffix);
  }
  check_f32_2d(path, *sums);
  check_f32_2d(path, *counts);
  const int64_t matrices = sums->dims.size() == 2 ? sums->dims[1] : 1;
  if (counts->dims[0] != 1 || counts->elements != matrices) {
    fail("{}: '{}' has {} matrices of sums but counts of shape {}x{}", path, name, matrices, counts->dims[0],
         counts->elements / counts->dims[0]);
  }
  ImatrixEntry entry;
  entry.columns = sums->dims[0];
  entry.sums = f32_values(*sums);
  for (float sum : entry.sums) {
    if (!std::isfinite(sum) || sum < 0.0f) fail("{}: '{}' holds a sum of squares that is {}", path, name, sum);
  }
  for (float count : f32_values(*counts)) {
    // Counts are whole token counts stored as f32; llama.cpp rounds them.
    if (!std::isfinite(count) || count < 0.0f || count > 9.0e15f) fail("{}: '{}' has a count of {}", path, name, count);
    entry.counts.push_back(std::llround(count));
  }
  return entry;
}

}  // namespace

Imatrix read_imatrix(const std::string& path) { return read_imatrix(gguf::GgufFile::open(path)); }

Imatrix read_imatrix(const gguf::GgufFile& file) {
  const std::string& path = file.source_name();
  const gguf::Metadata& metadata = file.metadata();
  if (const auto type = metadata.find_string("general.type"); type && *type != "imatrix") {
    fail("{}: not an importance matrix (general.type is '{}'; make one with `lumen imatrix`)", path, *type);
  }
  for (const char* key : {"imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"}) {
    if (!metadata.contains(key)) {
      fail("{}: not an importance matrix in llama.cpp's GGUF format (no {} key; make one with `lumen imatrix`)",
           path, key);
    }
  }
  Imatrix imatrix;
  imatrix.datasets = metadata.get_array("imatrix.datasets", gguf::ValueType::STRING).strings;
  imatrix.chunk_count = static_cast<uint32_t>(metadata.get_unsigned("imatrix.chunk_count"));
  imatrix.chunk_size = static_cast<uint32_t>(metadata.get_unsigned("imatrix.chunk_size"));

  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pairs;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    std::string name = tensor.name;
    if (strip_suffix(name, kSumsSuffix)) {
      pairs[name].first = &tensor;
    } else if (strip_suffix(name, kCountsSuffix)) {
      pairs[name].second = &tensor;
    } else {
      fail("{}: tensor '{}' is neither sums ({}) nor counts ({}) of an imatrix", path, tensor.name, kSumsSuffix,
           kCountsSuffix);
    }
  }
  if (pairs.empty()) fail("{}: the importance matrix has no entries", path);
  for (const auto& [name, tensors] : pairs) {
    imatrix.entries.emplace(name, read_entry(path, name, tensors.first, tensors.second));
  }
  return imatrix;
}

void write_imatrix(const std::string& path, const Imatrix& imatrix) {
  gguf::GgufWriter writer;
  writer.metadata().set("general.type", gguf::Value::of_string("imatrix"));
  writer.metadata().set("imatrix.datasets", gguf::Value::string_array(imatrix.datasets));
  writer.metadata().set("imatrix.chunk_count", gguf::Value::u32(imatrix.chunk_count));
  writer.metadata().set("imatrix.chunk_size", gguf::Value::u32(imatrix.chunk_size));
  for (const auto& [name, entry] : imatrix.entries) {
    const auto as_bytes = [](std::span<const float> values) {
      return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes());
    };
    // ggml drops trailing dimensions of 1, so a dense weight's entry is 1-D, as llama-imatrix writes it.
    const bool one = entry.matrices() == 1;
    writer.add_tensor(name + std::string(kSumsSuffix), tensor::DType::F32,
                      one ? std::vector<int64_t>{entry.columns} : std::vector<int64_t>{entry.columns, entry.matrices()},
                      as_bytes(entry.sums));
    std::vector<float> counts(entry.counts.begin(), entry.counts.end());
    writer.add_tensor(name + std::string(kCountsSuffix), tensor::DType::F32,
                      one ? std::vector<int64_t>{1} : std::vector<int64_t>{1, entry.matrices()},
                      [counts](std::span<uint8_t> out) { std::memcpy(out.data(), counts.data(), out.size()); });
  }
  writer.write(path);
}

std::vector<float> importance_of(const ImatrixEntry& entry) {
  std::vector<float> importance(entry.sums.size());
  for (int64_t m = 0; m < entry.matrices(); ++m) {
    const auto count = static_cast<float>(entry.counts[static_cast<size_t>(m)]);
    for (int64_t c = 0; c < entry.columns; ++c) {
      const auto i = static_cast<size_t>(m * entry.columns + c);
      importance[i] = count > 0.0f ? entry.sums[i] / count : 1.0f;
    }
  }
  return importance;
}

}  // namespace lumen::quantize
