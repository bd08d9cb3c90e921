#include "backend/cpu/kv_store.h"

#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::backend::cpu {

void store_kv_row(const float* src, int64_t n, tensor::DType type, void* dst) {
  switch (type) {
    case tensor::DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case tensor::DType::F16: {
      auto* half = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) half[i] = tensor::float_to_fp16(src[i]);
      return;
    }
    case tensor::DType::FP8_E4M3:  // no ggml type: Lumen's own saturating conversion
      tensor::quantize_row(type, src, dst, n);
      return;
    default:  // bf16, q8_0, q4_0: ggml's reference rounding
      tensor::quantize_row_ggml(type, src, dst, n);
  }
}

void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
              KvLayer& cache) {
  const int64_t kv_dim = k.dims[0];
  // Values that are a view of the keys arrive with them: v is not read.
  const bool values = !values_in_keys(cache);
  const int64_t v_dim = values ? v.dims[0] : cache.v.dims[0];
  if (k.type != tensor::DType::F32 || (values && (v.type != tensor::DType::F32 || v.rows() != k.rows()))) {
    fail("store_kv: k and v must be f32 with one row per token");
  }
  check_kv_layer(cache, kv_dim, "store_kv", v_dim);
  check_sequences(seqs, k.rows(), cache, "store_kv");
  for (const SequenceSlice& seq : seqs) {
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      const int64_t row = kv_row(seq, seq.start_pos + i, cache.block_size);
      store_kv_row(k.row<const float>(seq.first_token + i), kv_dim, cache.k.type,
                   cache.k.row<uint8_t>(row));
      if (values) {
        store_kv_row(v.row<const float>(seq.first_token + i), v_dim, cache.v.type, cache.v.row<uint8_t>(row));
      }
    }
  }
}

namespace {

// Start of a block's rows in one tensor of the cache, after checking the id.
uint8_t* block_start(const TensorView& t, int64_t block_size, int64_t block, int64_t n_blocks,
                     std::string_view op) {
  if (block < 0 || block >= n_blocks) fail("{}: block id {} is not in [0, {})", op, block, n_blocks);
  return static_cast<uint8_t*>(t.data) + static_cast<size_t>(block * block_size) * t.row_bytes;
}

}  // namespace

void copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) {
  const int64_t n_blocks = cache.k.dims[2];
  for (TensorView* t : {&cache.k, &cache.v}) {
    if (t == &cache.v && values_in_keys(cache)) break;  // copied with the keys
    const size_t bytes = t->row_bytes * static_cast<size_t>(cache.block_size);
    const uint8_t* from = block_start(*t, cache.block_size, src, n_blocks, "copy_kv_block");
    uint8_t* to = block_start(*t, cache.block_size, dst, n_blocks, "copy_kv_block");
    if (from != to) std::memcpy(to, from, bytes);
  }
}

void copy_kv_row(KvLayer& cache, int64_t src, int64_t dst) {
  const int64_t n_rows = cache.k.dims[2] * cache.block_size;
  if (src < 0 || src >= n_rows || dst < 0 || dst >= n_rows) {
    fail("copy_kv_row: rows {} and {} must be in [0, {})", src, dst, n_rows);
  }
  for (TensorView* t : {&cache.k, &cache.v}) {
    if (t == &cache.v && values_in_keys(cache)) break;  // copied with the keys
    auto* base = static_cast<uint8_t*>(t->data);
    if (src != dst) std::memcpy(base + static_cast<size_t>(dst) * t->row_bytes, base + static_cast<size_t>(src) * t->row_bytes, t->row_bytes);
  }
}

void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) {
  const int64_t n_blocks = cache.k.dims[2];
  std::memcpy(host_k, block_start(cache.k, cache.block_size, block, n_blocks, "read_kv_block"),
              kv_block_bytes(cache));
  if (const size_t v_bytes = kv_value_block_bytes(cache); v_bytes != 0) {
    std::memcpy(host_v, block_start(cache.v, cache.block_size, block, n_blocks, "read_kv_block"), v_bytes);
  }
}

void write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) {
  const int64_t n_blocks = cache.k.dims[2];
  std::memcpy(block_start(cache.k, cache.block_size, block, n_blocks, "write_kv_block"), host_k,
              kv_block_bytes(cache));
  if (const size_t v_bytes = kv_value_block_bytes(cache); v_bytes != 0) {
    std::memcpy(block_start(cache.v, cache.block_size, block, n_blocks, "write_kv_block"), host_v, v_bytes);
  }
}

}  // namespace lumen::backend::cpu
