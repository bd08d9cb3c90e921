// Binds an mmproj file's tensors to the declarations (vision_weights.h): the whole file is
// checked (every tensor declared, every required one present, shapes and types usable) before
// any is uploaded, so a wrong file fails at load with the tensor's name.
#include "vision/vision_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "backend/backend.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::vision {

namespace {

using backend::TensorView;

std::string file_name(const VisionTensorSpec& spec, int64_t layer) {
  return spec.per_layer() ? fmt::format(fmt::runtime(spec.name), layer) : spec.name;
}

std::string_view dim_name(VDim d) {
  switch (d) {
    case VDim::Embd: return "embedding_length";
    case VDim::FeedForward: return "feed_forward_length";
    case VDim::Channels: return "channels";
    case VDim::PatchSize: return "patch_size";
    case VDim::Positions: return "positions";
    case VDim::MergedEmbd: return "embedding_length x merge^2";
    case VDim::ProjHidden: return "projector width";
    case VDim::TextEmbd: return "text embedding width";
  }
  return "?";
}

// The dimension values the file's keys fix; the free ones are bound by the first tensor.
struct DimValues {
  std::map<VDim, int64_t> known;

  int64_t resolve(VDim d, int64_t seen) {
    auto [it, inserted] = known.try_emplace(d, seen);
    return inserted ? seen : it->second;
  }
};

// Legacy LLaVA files (and others the old converters wrote) name fc1 ffn_down and fc2 ffn_up: the
// shapes say which is which, as long as the FFN is not square.
bool ffn_names_swapped(const gguf::GgufFile& file, int64_t layer, int64_t n_embd, int64_t n_ff) {
  const gguf::TensorInfo* up = file.find_tensor(fmt::format("v.blk.{}.ffn_up.weight", layer));
  const gguf::TensorInfo* down = file.find_tensor(fmt::format("v.blk.{}.ffn_down.weight", layer));
  if (up == nullptr || down == nullptr || n_ff == n_embd) return false;
  return up->dims == std::vector<int64_t>{n_ff, n_embd} && down->dims == std::vector<int64_t>{n_embd, n_ff};
}

std::string swapped_name(std::string name) {
  const auto swap = [&](std::string_view from, std::string_view to) {
    const size_t at = name.find(from);
    if (at == std::string::npos) return false;
    name.replace(at, from.size(), to);
    return true;
  };
  if (!swap(".ffn_up.", ".ffn_down.")) swap(".ffn_down.", ".ffn_up.");
  return name;
}

// f32 copy of a tensor of any type with a reference dequantizer.
std::vector<float> to_f32(const gguf::TensorInfo& info, const std::string& source) {
  if (!tensor::has_reference_kernels(info.type) && info.type != tensor::DType::F32) {
    fail("{}: tensor {} has type {}, which cannot be read as floats", source, info.name, tensor::dtype_name(info.type));
  }
  std::vector<float> out(static_cast<size_t>(info.elements));
  const uint64_t row = *tensor::row_bytes(info.type, info.dims[0]);
  for (int64_t r = 0; r < info.rows(); ++r) {
    tensor::dequantize_row(info.type, info.data + r * row, out.data() + r * info.dims[0], info.dims[0]);
  }
  return out;
}

TensorView host_f32(std::vector<float>& data, int64_t cols, int64_t rows) {
  return backend::f32_matrix(data.data(), cols, rows);
}

}  // namespace

VisionWeights bind_vision_weights(const gguf::GgufFile& file, const std::vector<VisionTensorSpec>& specs,
                                  VisionHParams& hp, int64_t block_count, backend::Backend& backend,
                                  VectorsOn vectors) {
  const std::string& source = file.source_name();
  std::vector<bool> swapped(static_cast<size_t>(block_count));
  for (int64_t l = 0; l < block_count; ++l) swapped[l] = ffn_names_swapped(file, l, hp.n_embd, hp.n_ff);
  // The name each declaration has in this file, per layer.
  const auto name_in_file = [&](const VisionTensorSpec& spec, int64_t layer) {
    std::string name = file_name(spec, layer);
    return spec.per_layer() && swapped[layer] ? swapped_name(name) : name;
  };
  std::set<std::string> declared;
  for (const VisionTensorSpec& spec : specs) {
    for (int64_t l = 0; l < (spec.per_layer() ? block_count : 1); ++l) declared.insert(name_in_file(spec, l));
  }
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (!declared.contains(t.name)) {
      fail("{}: holds tensor {}, which a {} projector file does not have (block_count {})", source, t.name,
           hp.projector_type, block_count);
    }
  }
  DimValues dims;
  dims.known = {{VDim::Embd, hp.n_embd},
                {VDim::FeedForward, hp.n_ff},
                {VDim::Channels, 3},
                {VDim::PatchSize, hp.patch_size},
                {VDim::MergedEmbd, hp.n_embd * hp.merge * hp.merge},
                {VDim::Positions, hp.n_patches() + (file.find_tensor("v.class_embd") != nullptr ? 1 : 0)}};
  VisionWeights w;
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (const VisionTensorSpec& spec : specs) {
    for (int64_t l = 0; l < (spec.per_layer() ? hp.n_layer : 1); ++l) {
      const std::string name = name_in_file(spec, l);
      const gguf::TensorInfo* info = file.find_tensor(name);
      if (info == nullptr) {
        if (spec.required) fail("{}: misses tensor {} (a {} projector file has it)", source, name, hp.projector_type);
        continue;
      }
      std::vector<int64_t> want;
      for (size_t i = 0; i < spec.shape.size(); ++i) {
        const int64_t seen = i < info->dims.size() ? info->dims[i] : 1;
        want.push_back(dims.resolve(spec.shape[i], seen));
      }
      if (info->dims != want) {
        std::vector<std::string_view> names;
        for (VDim d : spec.shape) names.push_back(dim_name(d));
        fail("{}: tensor {} has shape [{}], expected [{}] ({})", source, name, fmt::join(info->dims, ", "),
             fmt::join(want, ", "), fmt::join(names, ", "));
      }
      TensorView view;
      switch (spec.role) {
        case VRole::Matrix:
        case VRole::Table:
        case VRole::Conv: {
          // The convolution's kernels as rows: {C*p*p, n_embd}, (c, y, x) order within a row.
          const int64_t cols = spec.role == VRole::Conv ? info->dims[0] * info->dims[1] * info->dims[2] : info->dims[0];
          const int64_t rows = info->elements / cols;
          if (!tensor::has_reference_kernels(info->type) && info->type != tensor::DType::F32) {
            fail("{}: tensor {} has type {}, which the CPU kernels do not read", source, name,
                 tensor::dtype_name(info->type));
          }
          view = backend.upload_weights(info->type, {cols, rows, 1, 1}, info->data);
          break;
        }
        case VRole::Vector: {
          std::vector<float>& data = w.owned.emplace_back(to_f32(*info, source));
          view = host_f32(data, info->dims[0], info->elements / info->dims[0]);
          break;
        }
        case VRole::Transposed: {
          const std::vector<float> stored = to_f32(*info, source);  // {out, in}
          const int64_t out = info->dims[0], in = info->dims[1];
          std::vector<float>& data = w.owned.emplace_back(stored.size());
          for (int64_t o = 0; o < out; ++o) {
            for (int64_t i = 0; i < in; ++i) data[o * in + i] = stored[i * out + o];
          }
          view = host_f32(data, in, out);
          break;
        }
      }
      if (vectors == VectorsOn::Backend && (spec.role == VRole::Vector || spec.role == VRole::Transposed)) {
        view = backend.upload_weights(tensor::DType::F32, {view.dims[0], view.dims[1], 1, 1}, view.data);
      }
      if (const auto* model_slot = std::get_if<0>(&spec.slot)) {
        w.** model_slot = view;
      } else {
        w.layers[l].*std::get<1>(spec.slot) = view;
      }
    }
  }
  const auto text = dims.known.find(VDim::TextEmbd);
  if (text == dims.known.end()) fail("{}: no tensor gives the text embedding width", source);
  hp.n_embd_out = text->second;
  return w;
}

}  // namespace lumen::vision
