// A token's matmul result must not depend, to the bit, on how many other tokens share the call
// or where it sits among them. The serving engine relies on it: a request batched with others,
// prefilled in chunks, or recomputed after preemption must produce exactly the tokens it
// produces alone. Checked through the backend (so whatever layout upload_weights chooses, e.g.
// packed rows, is what runs) for every weight type the models use, with batch sizes that
// exercise every tile width and remainder.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace lumen::backend {
namespace {

using tensor::DType;

class BatchInvariance : public ::testing::TestWithParam<DType> {};

TEST_P(BatchInvariance, EachTokenEqualsItsSingleTokenResult) {
  const DType type = GetParam();
  const int64_t rows = 67, cols = 512;  // rows: not a multiple of any tile or pack height
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> weights(row_bytes * rows);
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = uniform(rng) * (0.1f + 0.05f * static_cast<float>(r % 5));
    tensor::quantize_row(type, row.data(), weights.data() + row_bytes * r, cols);
  }
  for (unsigned threads : {1u, 2u}) {
    CpuBackend backend(threads);
    const TensorView w = backend.upload_weights(type, {cols, rows, 1, 1}, weights.data());
    const int64_t max_tokens = 70;
    std::vector<float> x(static_cast<size_t>(cols * max_tokens));
    for (float& v : x) v = uniform(rng) * 3.0f;
    // Each token alone.
    std::vector<float> single(static_cast<size_t>(rows * max_tokens));
    for (int64_t t = 0; t < max_tokens; ++t) {
      TensorView xt = f32_matrix(x.data() + t * cols, cols, 1);
      TensorView yt = f32_matrix(single.data() + t * rows, rows, 1);
      backend.matmul(w, xt, yt);
    }
    for (int64_t n : {2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 64, 65, 70}) {
      for (int64_t offset : {int64_t{0}, max_tokens - n}) {
        std::vector<float> y(static_cast<size_t>(rows * n));
        TensorView xs = f32_matrix(x.data() + offset * cols, cols, n);
        TensorView ys = f32_matrix(y.data(), rows, n);
        backend.matmul(w, xs, ys);
        size_t differing = 0;
        for (int64_t i = 0; i < rows * n; ++i) {
          differing += std::memcmp(&y[i], &single[offset * rows + i], sizeof(float)) != 0;
        }
        EXPECT_EQ(differing, 0u) << tensor::dtype_name(type) << ": " << n << " tokens from "
                                 << offset << ", " << threads << " threads";
      }
    }
  }
}

// Attention over a paged f16 cache: query position p gives the same output, to the bit, as part
// of a prefill of n positions (its key tiles then extend past p, masked), decoded alone, and as
// one of the rows of a speculative verification slice. n spans several of the exact path's key
// chunks, so a decode step (too few tasks for two threads) spreads its keys over tasks while the
// prefill walks them within one task: both must add the same chunk results in the same order.
TEST(AttentionBatchInvariance, DecodeAndVerifyRowsEqualThePrefillRows) {
  const int64_t head_dim = 64, n_heads = 9, n_kv = 3, block = 16, n = 600;
  const int64_t kv_dim = head_dim * n_kv;
  CpuBackend backend(2);
  const int64_t n_blocks = (n + block - 1) / block;
  std::vector<uint16_t> k_cache(static_cast<size_t>(kv_dim * block * n_blocks));
  std::vector<uint16_t> v_cache(k_cache.size());
  KvLayer cache;
  cache.block_size = block;
  cache.k = {DType::F16, {kv_dim, block, n_blocks, 1}, static_cast<size_t>(kv_dim) * 2, k_cache.data()};
  cache.v = {DType::F16, {kv_dim, block, n_blocks, 1}, static_cast<size_t>(kv_dim) * 2, v_cache.data()};
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(n_blocks - 1 - b);

  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(kv_dim * n)), v(k.size()), q(static_cast<size_t>(head_dim * n_heads * n));
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  for (float& x : q) x = normal(rng) * 2.0f;
  SequenceSlice all{0, n, 0, table};
  TensorView kv_k = f32_matrix(k.data(), kv_dim, n), kv_v = f32_matrix(v.data(), kv_dim, n);
  backend.store_kv(kv_k, kv_v, std::span(&all, 1), cache);

  AttentionConfig config;
  config.n_heads = n_heads;
  config.n_kv_heads = n_kv;
  config.head_dim = head_dim;
  config.scale = 0.125f;
  auto heads_view = [&](float* data, int64_t tokens) {
    return TensorView{DType::F32, {head_dim, n_heads, tokens, 1}, static_cast<size_t>(head_dim) * 4, data};
  };
  const int64_t row_floats = head_dim * n_heads;
  std::vector<float> prefill_out(q.size());
  TensorView q_all = heads_view(q.data(), n), out_all = heads_view(prefill_out.data(), n);
  backend.attention(q_all, cache, std::span(&all, 1), config, out_all);

  size_t differing = 0;
  std::vector<float> one(static_cast<size_t>(row_floats));
  for (int64_t p = 0; p < n; ++p) {
    SequenceSlice decode{0, 1, p, table};
    TensorView q_p = heads_view(q.data() + p * row_floats, 1), out_p = heads_view(one.data(), 1);
    backend.attention(q_p, cache, std::span(&decode, 1), config, out_p);
    differing += std::memcmp(one.data(), prefill_out.data() + p * row_floats, one.size() * sizeof(float)) != 0;
  }
  EXPECT_EQ(differing, 0u) << "decoded positions of " << n;

  const int64_t rows = 6;
  std::vector<float> verify(static_cast<size_t>(row_floats * rows));
  for (int64_t first : {int64_t{0}, int64_t{251}, int64_t{253}, int64_t{300}, int64_t{508}, n - rows}) {
    SequenceSlice slice{0, rows, first, table};
    TensorView q_v = heads_view(q.data() + first * row_floats, rows), out_v = heads_view(verify.data(), rows);
    backend.attention(q_v, cache, std::span(&slice, 1), config, out_v);
    EXPECT_EQ(std::memcmp(verify.data(), prefill_out.data() + first * row_floats, verify.size() * sizeof(float)), 0)
        << rows << " rows from position " << first;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, BatchInvariance,
                         ::testing::Values(DType::F32, DType::F16, DType::Q4_0, DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K,
                                           DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& param_info) { return std::string(tensor::dtype_name(param_info.param)); });

}  // namespace
}  // namespace lumen::backend
