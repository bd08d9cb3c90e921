#include "model/weights.h"

#include <fmt/ranges.h>

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
  std::array<int64_t, 4> full = {1, 1, 1, 1};
  for (size_t d = 0; d < dims.size(); ++d) full[d] = dims[d];
  return backend_.upload_weights(info->type, full, info->data);
}

std::optional<backend::TensorView> WeightBinder::optional(const std::string& name,
                                                          std::vector<int64_t> dims) {
  if (file_.find_tensor(name) == nullptr) return std::nullopt;
  return require(name, std::move(dims));
}

}  // namespace lumen::model
