#include "model/weights.h"

#include <fmt/ranges.h>

#include "tensor/dtype.h"
#include "util/error.h"

namespace lumen::model {

namespace {
std::string shape_text(const std::vector<int64_t>& dims) { return fmt::format("{}", fmt::join(dims, " x ")); }
}  // namespace

backend::TensorView WeightBinder::require(const std::string& name, std::vector<int64_t> dims) {
  const gguf::TensorInfo* info = file_.find_tensor(name);
  if (info == nullptr) fail("model is missing tensor '{}'", name);
  if (info->dims != dims) {
    fail("tensor '{}' has shape {}, expected {}", name, shape_text(info->dims), shape_text(dims));
  }
  bound_.insert(name);
  std::array<int64_t, 4> full = {1, 1, 1, 1};
  for (size_t d = 0; d < dims.size(); ++d) full[d] = dims[d];
  return backend_.upload_weights(info->type, full, info->data);
}

std::optional<backend::TensorView> WeightBinder::optional(const std::string& name,
                                                          std::vector<int64_t> dims) {
  if (file_.find_tensor(name) == nullptr) return std::nullopt;
  return require(name, std::move(dims));
}

backend::TensorView WeightBinder::require_f32(const std::string& name, std::vector<int64_t> dims) {
  const gguf::TensorInfo* info = file_.find_tensor(name);
  if (info != nullptr && info->type != tensor::DType::F32) {
    fail("tensor '{}' is {}, expected F32", name, tensor::dtype_name(info->type));
  }
  return require(name, std::move(dims));
}

std::optional<backend::TensorView> WeightBinder::optional_f32(const std::string& name, std::vector<int64_t> dims) {
  if (file_.find_tensor(name) == nullptr) return std::nullopt;
  return require_f32(name, std::move(dims));
}

void WeightBinder::check_all_bound() const {
  for (const gguf::TensorInfo& info : file_.tensors()) {
    if (!bound_.contains(info.name)) {
      fail("tensor '{}' is not part of the model its metadata describes (block_count, architecture)", info.name);
    }
  }
}

}  // namespace lumen::model
