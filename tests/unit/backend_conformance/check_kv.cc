// store_kv and the block moves (copy_kv_block, read_kv_block, write_kv_block) against a byte
// image of the cache kept by the test: every backend must write exactly these bytes (f32 rows
// copied, f16 and bf16 rows rounded to nearest even, q8_0 / q4_0 rows as ggml's reference
// quantizers write them, FP8 E4M3 rows as the nearest codes; encode_row) and leave every other
// row untouched.
#include <gtest/gtest.h>

#include <cstring>

#include "checks.h"
#include "kv_cache.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

// Writes one row of n values, encoded as store_kv must (encode_row), into the byte image at
// row `row` of the half that starts at half_offset.
void put_row(std::vector<uint8_t>& image, size_t half_offset, size_t row_bytes, int64_t row, DType type,
             const float* values, int64_t n) {
  encode_row(type, values, n, image.data() + half_offset + static_cast<size_t>(row) * row_bytes);
}

void check_store_kv(Backend& backend, const Case& c) {
  const auto [kv_dim, block_size, n_blocks] = c.shape;
  BackendCache cache = make_cache(backend, c.type, kv_dim, block_size, n_blocks);
  // Two sequences: a prefill from position 0 and a chunk that crosses a block boundary, with
  // block tables out of order.
  const std::vector<int32_t> table_a = {3, 1};
  const std::vector<int32_t> table_b = {0, 2};
  const SequenceSlice seqs[] = {{0, 5, 0, table_a}, {5, 4, block_size - 2, table_b}};
  const int64_t tokens = 9;
  const std::vector<float> k = random_values(static_cast<size_t>(kv_dim * tokens), 71, -3.0f, 3.0f);
  const std::vector<float> v = random_values(static_cast<size_t>(kv_dim * tokens), 72, -3.0f, 3.0f);
  const BackendTensor kd = upload_f32(backend, {kv_dim, tokens, 1, 1}, k);
  const BackendTensor vd = upload_f32(backend, {kv_dim, tokens, 1, 1}, v);
  backend.store_kv(kd.view, vd.view, seqs, cache.layer);

  const size_t row_bytes = cache.layer.k.row_bytes;
  std::vector<uint8_t> want(2 * static_cast<size_t>(n_blocks * block_size) * row_bytes, 0);
  const size_t v_offset = want.size() / 2;
  for (const SequenceSlice& seq : seqs) {
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      const int64_t pos = seq.start_pos + i;
      const int64_t row = seq.block_table[static_cast<size_t>(pos / block_size)] * block_size + pos % block_size;
      const auto src = static_cast<size_t>((seq.first_token + i) * kv_dim);
      put_row(want, 0, row_bytes, row, c.type, k.data() + src, kv_dim);
      put_row(want, v_offset, row_bytes, row, c.type, v.data() + src, kv_dim);
    }
  }
  EXPECT_TRUE(read_cache(backend, cache) == want) << "the cache's bytes differ from the stored rows";
}

void check_blocks(Backend& backend, const Case& c) {
  const auto [kv_dim, block_size, n_blocks] = c.shape;
  BackendCache cache = make_cache(backend, c.type, kv_dim, block_size, n_blocks);
  const size_t block_bytes = kv_block_bytes(cache.layer);
  // Random but valid values in every block (swap-in of preempted sequences).
  std::vector<std::vector<uint8_t>> k_blocks, v_blocks;
  for (int64_t b = 0; b < n_blocks; ++b) {
    std::vector<uint8_t> kb(block_bytes), vb(block_bytes);
    const auto values = random_values(static_cast<size_t>(2 * kv_dim * block_size), 80 + static_cast<uint32_t>(b));
    const size_t row_bytes = block_bytes / static_cast<size_t>(block_size);
    for (int64_t r = 0; r < block_size; ++r) {
      put_row(kb, 0, row_bytes, r, c.type, values.data() + r * kv_dim, kv_dim);
      put_row(vb, 0, row_bytes, r, c.type, values.data() + (block_size + r) * kv_dim, kv_dim);
    }
    backend.write_kv_block(cache.layer, b, kb.data(), vb.data());
    k_blocks.push_back(std::move(kb));
    v_blocks.push_back(std::move(vb));
  }
  // Copy-on-write of block 2 into block 0, and a copy onto itself (a no-op).
  backend.copy_kv_block(cache.layer, 2, 0);
  backend.copy_kv_block(cache.layer, 1, 1);
  k_blocks[0] = k_blocks[2];
  v_blocks[0] = v_blocks[2];

  std::vector<uint8_t> want;
  for (const auto& kb : k_blocks) want.insert(want.end(), kb.begin(), kb.end());
  for (const auto& vb : v_blocks) want.insert(want.end(), vb.begin(), vb.end());
  EXPECT_TRUE(read_cache(backend, cache) == want) << "blocks read back differ from those written and copied";
}

}  // namespace

void check_kv_ops(Backend& backend, const Case& c) {
  if (c.op == Op::kStoreKv) {
    check_store_kv(backend, c);
  } else {
    check_blocks(backend, c);
  }
}

}  // namespace lumen::backend::conformance
