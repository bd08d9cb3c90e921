#include "backend/common/kv_checks.h"

#include <cstdint>

#include "util/error.h"

namespace lumen::backend::common {

namespace {

void check_cache_tensor(const TensorView& t, int64_t kv_dim, int64_t block_size, std::string_view op,
                        std::string_view which) {
  if (!is_kv_cache_type(t.type)) {
    fail("{}: {} cache must be F32, F16, BF16, Q8_0, Q4_0 or FP8_E4M3, not {}", op, which,
         tensor::dtype_name(t.type));
  }
  if (kv_dim % tensor::dtype_info(t.type).block_elements != 0) {
    fail("{}: {} cache rows of {} values are not whole {} blocks", op, which, kv_dim, tensor::dtype_name(t.type));
  }
  if (t.dims[0] != kv_dim || t.dims[1] != block_size) {
    fail("{}: {} cache rows are {}x{}, expected {} values x block size {}", op, which, t.dims[0], t.dims[1], kv_dim,
         block_size);
  }
  if (t.data == nullptr || t.row_bytes < kv_slice_bytes(t.type, kv_dim)) {
    fail("{}: {} cache has no data or rows narrower than {} values", op, which, kv_dim);
  }
}

}  // namespace

void check_kv_layer(const KvLayer& cache, int64_t kv_dim, std::string_view op, int64_t v_dim) {
  if (cache.block_size <= 0) fail("{}: block size {} must be positive", op, cache.block_size);
  check_cache_tensor(cache.k, kv_dim, cache.block_size, op, "K");
  check_cache_tensor(cache.v, v_dim < 0 ? kv_dim : v_dim, cache.block_size, op, "V");
  if (values_in_keys(cache) && (cache.v.type != cache.k.type || cache.v.row_bytes != cache.k.row_bytes ||
                                cache.v.dims[0] > cache.k.dims[0])) {
    fail("{}: V is a view of K but not of K's type, rows and width", op);
  }
  if (cache.k.dims[2] * cache.k.dims[3] != cache.v.dims[2] * cache.v.dims[3]) {
    fail("{}: K and V caches hold different block counts", op);
  }
}

void check_sequences(std::span<const SequenceSlice> seqs, int64_t batch_tokens, const KvLayer& cache,
                     std::string_view op) {
  const int64_t n_blocks = cache.k.dims[2] * cache.k.dims[3];
  for (const SequenceSlice& seq : seqs) {
    if (seq.first_token < 0 || seq.n_tokens < 0 || seq.first_token > batch_tokens ||
        seq.n_tokens > batch_tokens - seq.first_token) {
      fail("{}: sequence tokens [{}, +{}) lie outside the batch of {}", op, seq.first_token, seq.n_tokens,
           batch_tokens);
    }
    if (seq.start_pos < 0 || seq.start_pos > INT32_MAX - seq.n_tokens) {
      fail("{}: sequence start position {} is out of range", op, seq.start_pos);
    }
    const int64_t end_pos = seq.start_pos + seq.n_tokens;
    const int64_t blocks_needed = (end_pos + cache.block_size - 1) / cache.block_size;
    if (static_cast<int64_t>(seq.block_table.size()) < blocks_needed) {
      fail("{}: block table of {} blocks cannot hold {} positions", op, seq.block_table.size(), end_pos);
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      const int32_t id = seq.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= n_blocks) fail("{}: block id {} is not in [0, {})", op, id, n_blocks);
    }
  }
}

}  // namespace lumen::backend::common
