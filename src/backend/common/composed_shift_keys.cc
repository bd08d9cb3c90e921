#include "backend/common/composed_shift_keys.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::backend::common {

void ComposedShiftKeys::run(Backend& backend, KvLayer& cache, std::span<const int32_t> blocks, int32_t delta,
                            const RopeConfig& config, int64_t head_dim) {
  if (values_in_keys(cache)) fail("shift_keys: a cache whose values are its keys' rows (latent attention)");
  const int64_t bs = cache.block_size, key_cols = cache.k.dims[0], value_cols = cache.v.dims[0];
  const auto n = static_cast<int64_t>(blocks.size()) * bs;
  if (n == 0) return;
  if (n > rows_ || key_cols != key_cols_ || value_cols != value_cols_) {
    rows_ = std::max(n, rows_);
    key_cols_ = key_cols;
    value_cols_ = value_cols;
    keys_ = backend.allocate(static_cast<size_t>(rows_ * key_cols) * sizeof(float));
    values_ = backend.allocate(static_cast<size_t>(rows_ * value_cols) * sizeof(float));
  }
  cache_rows_.clear();
  slices_.clear();
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (int64_t slot = 0; slot < bs; ++slot) cache_rows_.push_back(static_cast<int32_t>(blocks[i] * bs + slot));
    slices_.push_back({.first_token = static_cast<int64_t>(i) * bs,
                       .n_tokens = bs,
                       .start_pos = 0,
                       .block_table = blocks.subspan(i, 1)});
  }
  positions_.assign(static_cast<size_t>(n), delta);

  // The cache seen as a table of rows: {row, block_size * blocks}.
  const auto as_table = [](const TensorView& t) {
    TensorView table = t;
    table.dims = {t.dims[0], t.dims[1] * t.dims[2] * t.dims[3], 1, 1};
    return table;
  };
  TensorView keys = f32_matrix(static_cast<float*>(keys_->data()), key_cols, n);
  TensorView values = f32_matrix(static_cast<float*>(values_->data()), value_cols, n);
  backend.get_rows(as_table(cache.k), cache_rows_, keys);
  backend.get_rows(as_table(cache.v), cache_rows_, values);

  RopeConfig unit = config;  // the rotation alone
  unit.attn_factor = 1.0;
  unit.yarn_magnitude_in_scores = true;
  TensorView heads = keys;
  heads.dims = {head_dim, key_cols / head_dim, n, 1};
  heads.row_bytes = static_cast<size_t>(head_dim) * sizeof(float);
  if (cache.rotated) backend.rotate_heads(keys, head_dim);
  backend.rope(heads, positions_, unit);
  if (cache.rotated) backend.rotate_heads(keys, head_dim);
  backend.store_kv(keys, values, slices_, cache);
}

}  // namespace lumen::backend::common
