#include "backend/cpu/kv_store.h"

#include <cstring>

#include "tensor/fp16.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

void check_cache_tensor(const TensorView& t, int64_t kv_dim, int64_t block_size,
                        std::string_view op, std::string_view which) {
  if (t.type != tensor::DType::F32 && t.type != tensor::DType::F16) {
    fail("{}: {} cache must be F32 or F16, not {}", op, which, tensor::dtype_name(t.type));
  }
  if (t.dims[0] != kv_dim || t.dims[1] != block_size) {
    fail("{}: {} cache rows are {}x{}, expected {} values x block size {}", op, which, t.dims[0],
         t.dims[1], kv_dim, block_size);
  }
  const size_t element = t.type == tensor::DType::F32 ? 4 : 2;
  if (t.data == nullptr || t.row_bytes < static_cast<size_t>(kv_dim) * element) {
    fail("{}: {} cache has no data or rows narrower than {} values", op, which, kv_dim);
  }
}

void store_row(const float* src, int64_t n, tensor::DType type, void* dst) {
  if (type == tensor::DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  auto* half = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) half[i] = tensor::float_to_fp16(src[i]);
}

}  // namespace

void check_kv_layer(const KvLayer& cache, int64_t kv_dim, std::string_view op) {
  if (cache.block_size <= 0) fail("{}: block size {} must be positive", op, cache.block_size);
  check_cache_tensor(cache.k, kv_dim, cache.block_size, op, "K");
  check_cache_tensor(cache.v, kv_dim, cache.block_size, op, "V");
  if (cache.k.dims[2] * cache.k.dims[3] != cache.v.dims[2] * cache.v.dims[3]) {
    fail("{}: K and V caches hold different block counts", op);
  }
}

void check_sequences(std::span<const SequenceSlice> seqs, int64_t batch_tokens,
                     const KvLayer& cache, std::string_view op) {
  const int64_t n_blocks = cache.k.dims[2] * cache.k.dims[3];
  for (const SequenceSlice& seq : seqs) {
    if (seq.first_token < 0 || seq.n_tokens < 0 || seq.first_token > batch_tokens ||
        seq.n_tokens > batch_tokens - seq.first_token) {
      fail("{}: sequence tokens [{}, +{}) lie outside the batch of {}", op, seq.first_token,
           seq.n_tokens, batch_tokens);
    }
    if (seq.start_pos < 0 || seq.start_pos > INT32_MAX - seq.n_tokens) {
      fail("{}: sequence start position {} is out of range", op, seq.start_pos);
    }
    const int64_t end_pos = seq.start_pos + seq.n_tokens;
    const int64_t blocks_needed = (end_pos + cache.block_size - 1) / cache.block_size;
    if (static_cast<int64_t>(seq.block_table.size()) < blocks_needed) {
      fail("{}: block table of {} blocks cannot hold {} positions", op, seq.block_table.size(),
           end_pos);
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      const int32_t id = seq.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= n_blocks) fail("{}: block id {} is not in [0, {})", op, id, n_blocks);
    }
  }
}

void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
              KvLayer& cache) {
  const int64_t kv_dim = k.dims[0];
  if (k.type != tensor::DType::F32 || v.type != tensor::DType::F32 || v.dims[0] != kv_dim ||
      v.rows() != k.rows()) {
    fail("store_kv: k and v must be f32 with the same shape");
  }
  check_kv_layer(cache, kv_dim, "store_kv");
  check_sequences(seqs, k.rows(), cache, "store_kv");
  for (const SequenceSlice& seq : seqs) {
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      const int64_t row = kv_row(seq, seq.start_pos + i, cache.block_size);
      store_row(k.row<const float>(seq.first_token + i), kv_dim, cache.k.type,
                cache.k.row<uint8_t>(row));
      store_row(v.row<const float>(seq.first_token + i), kv_dim, cache.v.type,
                cache.v.row<uint8_t>(row));
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
    const size_t bytes = t->row_bytes * static_cast<size_t>(cache.block_size);
    const uint8_t* from = block_start(*t, cache.block_size, src, n_blocks, "copy_kv_block");
    uint8_t* to = block_start(*t, cache.block_size, dst, n_blocks, "copy_kv_block");
    if (from != to) std::memcpy(to, from, bytes);
  }
}

void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) {
  const int64_t n_blocks = cache.k.dims[2];
  const size_t bytes = kv_block_bytes(cache);
  if (cache.v.row_bytes != cache.k.row_bytes) fail("read_kv_block: K and V rows differ in size");
  std::memcpy(host_k, block_start(cache.k, cache.block_size, block, n_blocks, "read_kv_block"), bytes);
  std::memcpy(host_v, block_start(cache.v, cache.block_size, block, n_blocks, "read_kv_block"), bytes);
}

void write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) {
  const int64_t n_blocks = cache.k.dims[2];
  const size_t bytes = kv_block_bytes(cache);
  if (cache.v.row_bytes != cache.k.row_bytes) fail("write_kv_block: K and V rows differ in size");
  std::memcpy(block_start(cache.k, cache.block_size, block, n_blocks, "write_kv_block"), host_k, bytes);
  std::memcpy(block_start(cache.v, cache.block_size, block, n_blocks, "write_kv_block"), host_v, bytes);
}

}  // namespace lumen::backend::cpu
