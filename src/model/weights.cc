#include "model/weights.h"

#include <fmt/ranges.h>

#include <set>

#include "model/arch/architecture.h"
#include "tensor/dtype.h"
#include "util/error.h"

namespace lumen::model {

namespace {

std::string shape_text(const std::vector<int64_t>& dims) { return fmt::format("{}", fmt::join(dims, " x ")); }

// Calls f(spec, layer, file name) for every tensor the architecture declares for these
// hyperparameters; layer is 0 for per-model tensors.
template <typename F>
void for_each_declared(const Architecture& arch, const HParams& hp, F&& f) {
  for (const TensorSpec& spec : arch.tensors) {
    if (!spec.per_layer()) f(spec, 0, spec.file_name(0));
  }
  for (uint64_t layer = 0; layer < hp.block_count; ++layer) {
    for (const TensorSpec& spec : arch.tensors) {
      if (spec.per_layer() && spec.declared_for(hp, layer)) f(spec, layer, spec.file_name(layer));
    }
  }
}

void check_tensor(const gguf::TensorInfo* info, const TensorSpec& spec, const std::string& name, const HParams& hp) {
  if (info == nullptr) {
    if (!spec.optional()) fail("model is missing tensor '{}'", name);
    return;
  }
  const std::vector<int64_t> dims = spec.dims(hp);
  if (info->dims != dims) {
    fail("tensor '{}' has shape {}, expected {}", name, shape_text(info->dims), shape_text(dims));
  }
  if (!spec.allows(info->type)) {
    fail("tensor '{}' is {}, expected {}", name, tensor::dtype_name(info->type),
         spec.role == TensorRole::Matrix || spec.role == TensorRole::Router ? "a weight type the kernels read" : "F32");
  }
}

}  // namespace

void validate_tensors(const gguf::GgufFile& file, const Architecture& arch, const HParams& hp) {
  std::set<std::string> declared;
  for_each_declared(arch, hp, [&](const TensorSpec& spec, uint64_t, const std::string& name) {
    check_tensor(file.find_tensor(name), spec, name, hp);
    declared.insert(name);
  });
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (!declared.contains(info.name)) {
      fail("tensor '{}' is not part of the {} model its metadata describes (block_count = {})", info.name, arch.name,
           hp.block_count);
    }
  }
}

TransformerWeights bind_weights(const gguf::GgufFile& file, const Architecture& arch, const HParams& hp,
                                backend::Backend& backend, const TensorSource& source, const TensorFilter& wanted) {
  validate_tensors(file, arch, hp);
  TransformerWeights w;
  w.layers.resize(hp.block_count);
  for_each_declared(arch, hp, [&](const TensorSpec& spec, uint64_t layer, const std::string& name) {
    if (wanted && !wanted(name, spec.per_layer(), layer)) return;  // another backend's
    const gguf::TensorInfo* info = file.find_tensor(name);
    if (info == nullptr) {
      // Optional and absent; only an optional slot can stay empty.
      if (std::holds_alternative<backend::TensorView TransformerWeights::*>(spec.slot) ||
          std::holds_alternative<backend::TensorView LayerWeights::*>(spec.slot)) {
        fail("architecture {}: optional tensor '{}' is bound to a required slot", arch.name, name);
      }
      return;
    }
    const HostTensor host = source ? source(spec, *info, layer) : HostTensor{info->type, info->dims, info->data};
    std::array<int64_t, 4> full = {1, 1, 1, 1};
    for (size_t d = 0; d < host.dims.size() && d < full.size(); ++d) full[d] = host.dims[d];
    const backend::TensorView view = backend.upload_weights(host.type, full, host.data);
    w.bound_bytes += static_cast<uint64_t>(view.row_bytes) * static_cast<uint64_t>(view.rows());
    LayerWeights& lw = w.layers[layer];
    std::visit(
        [&](auto member) {
          using Member = decltype(member);
          if constexpr (std::is_same_v<Member, backend::TensorView TransformerWeights::*> ||
                        std::is_same_v<Member, std::optional<backend::TensorView> TransformerWeights::*>) {
            w.*member = view;
          } else {
            lw.*member = view;
          }
        },
        spec.slot);
  });
  return w;
}

}  // namespace lumen::model
