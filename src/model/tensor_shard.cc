#include "model/tensor_shard.h"

#include <cstdlib>
#include <cstring>

#include "gguf/file.h"
#include "model/arch/tensor_spec.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// [first, first + count) of `n` things split into `parts` near-equal contiguous ranges.
std::pair<int64_t, int64_t> split(int64_t n, int64_t parts, int64_t part) {
  const int64_t first = part * n / parts;
  return {first, (part + 1) * n / parts - first};
}

}  // namespace

ShardRanges shard_ranges(const HParams& hp, int64_t ff_unit, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) fail("tensor parallelism: rank {} of {}", rank, size);
  const auto n_q = static_cast<int64_t>(hp.head_count);
  const auto n_kv = static_cast<int64_t>(hp.head_count_kv);
  if (n_kv <= 0 || n_q % n_kv != 0) fail("tensor parallelism: {} query heads over {} KV heads", n_q, n_kv);
  const int64_t group = n_q / n_kv;
  ShardRanges r;
  if (n_kv >= size) {
    std::tie(r.kv_head0, r.kv_heads) = split(n_kv, size, rank);
    r.q_head0 = r.kv_head0 * group;
    r.q_heads = r.kv_heads * group;
  } else {
    // Fewer KV heads than ranks: each is held by size / n_kv ranks that split its query heads.
    if (size % n_kv != 0 || group < size / n_kv) {
      fail("tensor parallelism: {} ranks cannot share the model's {} KV heads ({} query heads each): use at most {} "
           "ranks, or a multiple of {} up to {}",
           size, n_kv, group, n_kv, n_kv, n_q);
    }
    const int64_t sharers = size / n_kv;
    r.kv_head0 = rank / sharers;
    r.kv_heads = 1;
    const auto [q0, nq] = split(group, sharers, rank % sharers);
    r.q_head0 = r.kv_head0 * group + q0;
    r.q_heads = nq;
  }
  const auto ff = static_cast<int64_t>(hp.feed_forward_length);
  if (ff_unit <= 0 || ff % ff_unit != 0 || ff / ff_unit < size) {
    fail("tensor parallelism: the FFN's {} columns do not split into {} parts of whole {}-value blocks", ff, size,
         ff_unit);
  }
  const auto [u0, nu] = split(ff / ff_unit, size, rank);
  r.ff0 = u0 * ff_unit;
  r.ff = nu * ff_unit;
  return r;
}

HParams shard_hparams(const HParams& hp, const ShardRanges& ranges) {
  HParams local = hp;
  local.head_count = static_cast<uint64_t>(ranges.q_heads);
  local.head_count_kv = static_cast<uint64_t>(ranges.kv_heads);
  local.feed_forward_length = static_cast<uint64_t>(ranges.ff);
  return local;
}

void ShardBytes::FreeAligned::operator()(uint8_t* p) const { std::free(p); }

uint8_t* ShardBytes::allocate(size_t bytes) {
  // Cache-line aligned, as the file's mapped tensors are (GGUF aligns them to 32 bytes or more).
  constexpr size_t kAlign = 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign));
  if (p == nullptr) fail("tensor parallelism: out of memory for a {}-byte weight slice", bytes);
  blocks_.emplace_back(p);
  return p;
}

HostTensor ShardBytes::rows(const gguf::TensorInfo& info, int64_t row0, int64_t n) {
  if (info.dims.size() != 2 || row0 < 0 || n <= 0 || row0 + n > info.dims[1]) {
    fail("tensor parallelism: rows {}..{} of tensor '{}'", row0, row0 + n, info.name);
  }
  const size_t row_bytes = info.bytes / static_cast<size_t>(info.dims[1]);
  uint8_t* out = allocate(row_bytes * static_cast<size_t>(n));
  std::memcpy(out, info.data + row_bytes * static_cast<size_t>(row0), row_bytes * static_cast<size_t>(n));
  return {info.type, {info.dims[0], n}, out};
}

HostTensor ShardBytes::columns(const gguf::TensorInfo& info, int64_t col0, int64_t n) {
  const tensor::DTypeInfo& type = tensor::dtype_info(info.type);
  const int64_t block = type.block_elements;
  if (info.dims.empty() || info.dims.size() > 2 || col0 < 0 || n <= 0 || col0 + n > info.dims[0]) {
    fail("tensor parallelism: columns {}..{} of tensor '{}'", col0, col0 + n, info.name);
  }
  if (col0 % block != 0 || n % block != 0) {
    fail("tensor parallelism: tensor '{}' ({}) cannot be split at column {}: its blocks hold {} values", info.name,
         type.name, col0 % block != 0 ? col0 : col0 + n, block);
  }
  const int64_t rows = info.dims.size() == 2 ? info.dims[1] : 1;
  const size_t row_bytes = info.bytes / static_cast<size_t>(rows);
  const size_t skip = static_cast<size_t>(col0 / block) * type.block_bytes;
  const size_t keep = static_cast<size_t>(n / block) * type.block_bytes;
  uint8_t* out = allocate(keep * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(out + keep * static_cast<size_t>(r), info.data + row_bytes * static_cast<size_t>(r) + skip, keep);
  }
  std::vector<int64_t> dims = info.dims;
  dims[0] = n;
  return {info.type, std::move(dims), out};
}

TensorSource shard_tensor_source(const HParams& hp, const ShardRanges& ranges, const LayerRange& layers,
                                 ShardBytes& bytes) {
  const auto head_dim = static_cast<int64_t>(hp.head_dim);
  const auto value_dim = static_cast<int64_t>(hp.value_dim != 0 ? hp.value_dim : hp.head_dim);
  return [=, &bytes](const TensorSpec& spec, const gguf::TensorInfo& info, uint64_t layer) -> HostTensor {
    if (spec.per_layer() && (layer < layers.first || layer >= layers.end)) return {info.type, info.dims, info.data};
    using Required = backend::TensorView LayerWeights::*;
    using Optional = std::optional<backend::TensorView> LayerWeights::*;
    if (const auto* m = std::get_if<Required>(&spec.slot)) {
      if (*m == &LayerWeights::wq) return bytes.rows(info, ranges.q_head0 * head_dim, ranges.q_heads * head_dim);
      if (*m == &LayerWeights::wk) return bytes.rows(info, ranges.kv_head0 * head_dim, ranges.kv_heads * head_dim);
      if (*m == &LayerWeights::wv) return bytes.rows(info, ranges.kv_head0 * value_dim, ranges.kv_heads * value_dim);
      if (*m == &LayerWeights::wo) return bytes.columns(info, ranges.q_head0 * value_dim, ranges.q_heads * value_dim);
      if (*m == &LayerWeights::ffn_gate || *m == &LayerWeights::ffn_up) return bytes.rows(info, ranges.ff0, ranges.ff);
      if (*m == &LayerWeights::ffn_down) return bytes.columns(info, ranges.ff0, ranges.ff);
    } else if (const auto* o = std::get_if<Optional>(&spec.slot)) {
      if (*o == &LayerWeights::bq) return bytes.columns(info, ranges.q_head0 * head_dim, ranges.q_heads * head_dim);
      if (*o == &LayerWeights::bk) return bytes.columns(info, ranges.kv_head0 * head_dim, ranges.kv_heads * head_dim);
      if (*o == &LayerWeights::bv) return bytes.columns(info, ranges.kv_head0 * value_dim, ranges.kv_heads * value_dim);
    }
    return {info.type, info.dims, info.data};
  };
}

}  // namespace lumen::model
