#include "model/kv_cache.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "tensor/quantize.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::model {

namespace {

kv::KvLayout one_group(const HParams& hp) {
  const kv::KvLayout all = kv::make_kv_layout(std::vector<int64_t>(hp.block_count, 0), false);
  return is_hybrid(hp) ? kv::attention_kv_layout(all, hp.ssm_layers) : all;
}

// Whether `rows` rows of a tensor view's type, starting at `host`, hold only finite values.
bool rows_are_finite(const backend::TensorView& view, const uint8_t* host, int64_t rows, std::vector<float>& scratch) {
  const tensor::DTypeInfo& info = tensor::dtype_info(view.type);
  const auto elements = static_cast<int64_t>(view.row_bytes / info.block_bytes) * info.block_elements;
  scratch.resize(static_cast<size_t>(elements));
  for (int64_t r = 0; r < rows; ++r) {
    if (view.type == tensor::DType::F32) {
      std::memcpy(scratch.data(), host, view.row_bytes);
    } else {
      tensor::dequantize_row(view.type, host, scratch.data(), elements);
    }
    for (float x : scratch) {
      if (!std::isfinite(x)) return false;
    }
    host += view.row_bytes;
  }
  return true;
}

// Values per position of one layer that V stores itself: none when they are a view of the keys.
size_t owned_value_row(const HParams& hp) { return kv_values_in_keys(hp) ? 0 : kv_value_row(hp); }

}  // namespace

void check_kv_cache_type(const backend::Backend& backend, const HParams& hp, tensor::DType type) {
  if (!backend::is_kv_cache_type(type)) {
    fail("a KV cache cannot hold {}: f16, bf16, q8_0, q4_0, fp8_e4m3 or f32", tensor::dtype_name(type));
  }
  if (!backend.supports_kv_type(type)) {
    fail("the {} backend keeps its KV cache in f16 (or f32) only, not {}; a compressed KV cache needs --device cpu",
         backend.name(), tensor::dtype_name(type));
  }
  // Attention reads each head's slice of a row, which must be whole blocks of the type.
  const int64_t block = tensor::dtype_info(type).block_elements;
  const uint64_t value_head = is_mla(hp) ? hp.value_dim : hp.head_dim;
  if (hp.head_dim % static_cast<uint64_t>(block) != 0 || value_head % static_cast<uint64_t>(block) != 0) {
    fail("a {} KV cache needs heads of a multiple of {} values; this model's keys have {} and values {}",
         tensor::dtype_name(type), block, hp.head_dim, value_head);
  }
}

bool rotates_kv_cache(const HParams& hp, tensor::DType type) {
  using tensor::DType;
  const bool quantized = type == DType::Q8_0 || type == DType::Q4_0 || type == DType::FP8_E4M3;
  return quantized && !kv_values_in_keys(hp) && is_power_of_two(hp.head_dim) &&
         kv_value_row(hp) == hp.head_dim * hp.head_count_kv;
}

KvCache::KvCache(backend::Backend& backend, const HParams& hp, int64_t n_blocks,
                 int64_t block_size, tensor::DType type, bool rotate)
    : KvCache(backend, hp, one_group(hp), n_blocks, block_size, type, rotate) {}

KvCache::KvCache(backend::Backend& backend, const HParams& hp, kv::KvLayout layout, int64_t n_blocks,
                 int64_t block_size, tensor::DType type, bool rotate, const BackendSplit& split)
    : n_blocks_(n_blocks), block_size_(block_size), layout_(std::move(layout)) {
  if (layout_.group_of_layer.size() != hp.block_count || layout_.group_size <= 0) {
    fail("KV cache layout covers {} layers, the model has {}", layout_.group_of_layer.size(), hp.block_count);
  }
  if (n_blocks <= 0 || block_size <= 0) fail("KV cache needs blocks: {} x {}", n_blocks, block_size);
  const std::vector<kv::KvLayout> layouts = part_layouts(layout_, split);
  const bool first_holds_layers = !split.active() || split.first_layer > 0;
  for (size_t p = 0; p < layouts.size(); ++p) {
    parts_.push_back({p == 0 && first_holds_layers ? &backend : split.second, layouts[p], {}});
  }
  for (const Part& part : parts_) check_kv_cache_type(*part.backend, hp, type);
  const auto k_row = static_cast<int64_t>(kv_key_row(hp)), v_row = static_cast<int64_t>(kv_value_row(hp));
  for (Part& part : parts_) {
    auto allocate = [&](int64_t row) {
      const size_t row_bytes = backend::kv_slice_bytes(type, row);
      buffers_.push_back(part.backend->allocate(row_bytes * static_cast<size_t>(block_size * n_blocks)));
      return backend::TensorView{type, {row, block_size, n_blocks, 1}, row_bytes, buffers_.back()->data()};
    };
    for (int64_t i = 0; i < part.layout.group_size; ++i) {
      backend::KvLayer layer;
      layer.block_size = block_size;
      layer.rotated = rotate && rotates_kv_cache(hp, type);
      layer.k = allocate(k_row);
      if (kv_values_in_keys(hp)) {
        layer.v = layer.k;  // the leading v_row values of each key row (backend::values_in_keys)
        layer.v.dims[0] = v_row;
      } else {
        layer.v = allocate(v_row);
      }
      part.slots.push_back(layer);
    }
  }
}

std::vector<kv::KvLayout> KvCache::part_layouts(const kv::KvLayout& whole, const BackendSplit& split) {
  if (!split.active()) return {whole};
  const int n_layers = static_cast<int>(whole.group_of_layer.size());
  const int first = static_cast<int>(split.first_layer);
  if (first > n_layers) fail("KV cache: a split at layer {} of a model of {}", first, n_layers);
  std::vector<kv::KvLayout> layouts;
  if (first > 0) layouts.push_back(kv::stage_kv_layout(whole, 0, first));
  if (first < n_layers) layouts.push_back(kv::stage_kv_layout(whole, first, n_layers));
  return layouts;
}

backend::KvLayer& KvCache::layer(size_t index) {
  for (Part& part : parts_) {
    if (index < part.layout.slot_of_layer.size() && part.layout.slot_of_layer[index] >= 0) {
      return part.slots[static_cast<size_t>(part.layout.slot_of_layer[index])];
    }
  }
  fail("KV cache: layer {} is not one this cache holds", index);
}

bool KvCache::rotated() const {
  for (const Part& part : parts_) {
    if (!part.slots.empty()) return part.slots.front().rotated;
  }
  return false;
}

size_t KvCache::bytes_per_block(const HParams& hp, int64_t block_size, tensor::DType type) {
  return bytes_per_page(hp, one_group(hp), block_size, type);
}

size_t KvCache::bytes_per_page(const HParams& hp, const kv::KvLayout& layout, int64_t block_size,
                               tensor::DType type) {
  const size_t row = backend::kv_slice_bytes(type, static_cast<int64_t>(kv_key_row(hp))) +
                     backend::kv_slice_bytes(type, static_cast<int64_t>(owned_value_row(hp)));
  return static_cast<size_t>(layout.group_size) * row * static_cast<size_t>(block_size);
}

void KvCache::zero_block(int64_t block) {
  const std::vector<uint8_t> zeros(block_host_bytes(), 0);
  write_block(block, zeros.data());
}

// The page's views part by part (the first backend's, then the second's): the order of a host
// block's bytes.
void KvCache::copy_block(int64_t src, int64_t dst) {
  for (Part& part : parts_) {
    for (backend::KvLayer& layer : part.slots) part.backend->copy_kv_block(layer, src, dst);
  }
}

void KvCache::copy_position(int64_t src_block, int64_t src_slot, int64_t dst_block, int64_t dst_slot) {
  for (Part& part : parts_) {
    for (backend::KvLayer& layer : part.slots) {
      part.backend->copy_kv_row(layer, src_block * block_size_ + src_slot, dst_block * block_size_ + dst_slot);
    }
  }
}

size_t KvCache::block_host_bytes() const {
  size_t total = 0;
  for (const Part& part : parts_) {
    for (const backend::KvLayer& layer : part.slots) {
      total += backend::kv_block_bytes(layer) + backend::kv_value_block_bytes(layer);
    }
  }
  return total;
}

void KvCache::read_block(int64_t block, uint8_t* host) const {
  for (const Part& part : parts_) {
    for (const backend::KvLayer& layer : part.slots) {
      const size_t keys = backend::kv_block_bytes(layer);
      part.backend->read_kv_block(layer, block, host, host + keys);
      host += keys + backend::kv_value_block_bytes(layer);
    }
  }
}

void KvCache::write_block(int64_t block, const uint8_t* host) {
  for (Part& part : parts_) {
    for (backend::KvLayer& layer : part.slots) {
      const size_t keys = backend::kv_block_bytes(layer);
      part.backend->write_kv_block(layer, block, host, host + keys);
      host += keys + backend::kv_value_block_bytes(layer);
    }
  }
}

bool KvCache::host_block_is_finite(const uint8_t* host) const {
  std::vector<float> scratch;
  for (const Part& part : parts_) {
    for (const backend::KvLayer& layer : part.slots) {
      if (!rows_are_finite(layer.k, host, layer.block_size, scratch)) return false;
      host += backend::kv_block_bytes(layer);
      if (backend::kv_value_block_bytes(layer) == 0) continue;
      if (!rows_are_finite(layer.v, host, layer.block_size, scratch)) return false;
      host += backend::kv_value_block_bytes(layer);
    }
  }
  return true;
}

size_t KvCache::bytes() const {
  size_t total = 0;
  for (const auto& buffer : buffers_) total += buffer->size();
  return total;
}

}  // namespace lumen::model
