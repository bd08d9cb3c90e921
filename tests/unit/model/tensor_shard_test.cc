// Tensor parallelism's split of a model (model/tensor_shard.h): which heads and FFN columns each
// rank gets, and that the row and column slices of a quantized matrix, multiplied on their own
// and summed, give the whole matrix's product.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/file.h"
#include "model/tensor_shard.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::model {
namespace {

HParams heads(uint64_t q, uint64_t kv, uint64_t ff) {
  HParams hp;
  hp.head_count = q;
  hp.head_count_kv = kv;
  hp.head_dim = 64;
  hp.feed_forward_length = ff;
  return hp;
}

TEST(ShardRanges, SplitsKvHeadsWithTheirQueryHeadsAndTheFfnInWholeBlocks) {
  // SmolLM2-135M: 9 query heads over 3 KV heads, FFN 1536 (Q4_1 blocks of 32).
  const HParams smol = heads(9, 3, 1536);
  const ShardRanges r0 = shard_ranges(smol, 32, 0, 2), r1 = shard_ranges(smol, 32, 1, 2);
  EXPECT_EQ(r0.kv_head0, 0);
  EXPECT_EQ(r0.kv_heads, 1);
  EXPECT_EQ(r0.q_head0, 0);
  EXPECT_EQ(r0.q_heads, 3);
  EXPECT_EQ(r1.kv_head0, 1);
  EXPECT_EQ(r1.kv_heads, 2);
  EXPECT_EQ(r1.q_head0, 3);
  EXPECT_EQ(r1.q_heads, 6);
  EXPECT_EQ(r0.ff0, 0);
  EXPECT_EQ(r0.ff, 768);
  EXPECT_EQ(r1.ff0, 768);
  EXPECT_EQ(r1.ff, 768);
  // Three ranks: one KV head each; the FFN in 48 blocks, 16 each.
  for (int r = 0; r < 3; ++r) {
    const ShardRanges s = shard_ranges(smol, 32, r, 3);
    EXPECT_EQ(s.kv_head0, r);
    EXPECT_EQ(s.q_head0, 3 * r);
    EXPECT_EQ(s.q_heads, 3);
    EXPECT_EQ(s.ff0, 512 * r);
    EXPECT_EQ(s.ff, 512);
  }
  // Six ranks: each KV head shared by two ranks that split its 3 query heads 1 + 2.
  const ShardRanges a = shard_ranges(smol, 32, 4, 6), b = shard_ranges(smol, 32, 5, 6);
  EXPECT_EQ(a.kv_head0, 2);
  EXPECT_EQ(b.kv_head0, 2);
  EXPECT_EQ(a.q_head0, 6);
  EXPECT_EQ(a.q_heads, 1);
  EXPECT_EQ(b.q_head0, 7);
  EXPECT_EQ(b.q_heads, 2);
}

TEST(ShardRanges, GemmaSharesItsOneKvHead) {
  // Gemma 3 270M: 4 query heads, 1 KV head, FFN 2048 in K-quant blocks of 256.
  const HParams gemma = heads(4, 1, 2048);
  for (int r = 0; r < 2; ++r) {
    const ShardRanges s = shard_ranges(gemma, 256, r, 2);
    EXPECT_EQ(s.kv_head0, 0);
    EXPECT_EQ(s.kv_heads, 1);
    EXPECT_EQ(s.q_head0, 2 * r);
    EXPECT_EQ(s.q_heads, 2);
    EXPECT_EQ(s.ff, 1024);
  }
  const HParams local = shard_hparams(gemma, shard_ranges(gemma, 256, 1, 2));
  EXPECT_EQ(local.head_count, 2u);
  EXPECT_EQ(local.head_count_kv, 1u);
  EXPECT_EQ(local.feed_forward_length, 1024u);
}

TEST(ShardRanges, RefusesSplitsThatDoNotFit) {
  EXPECT_THROW(shard_ranges(heads(9, 3, 1536), 32, 0, 4), Error);    // 4 ranks over 3 KV heads
  EXPECT_THROW(shard_ranges(heads(4, 1, 2048), 256, 0, 8), Error);   // more ranks than query heads
  EXPECT_THROW(shard_ranges(heads(4, 4, 512), 256, 0, 4), Error);    // 2 blocks of FFN for 4 ranks
  EXPECT_THROW(shard_ranges(heads(4, 4, 512), 32, 2, 2), Error);     // no rank 2 of 2
}

// A random {cols, rows} matrix of `type` as a file's tensor would hold it.
struct QuantMatrix {
  std::vector<uint8_t> bytes;
  gguf::TensorInfo info;
  QuantMatrix(tensor::DType type, int64_t cols, int64_t rows, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(static_cast<size_t>(cols));
    const size_t row_bytes = *tensor::row_bytes(type, cols);
    bytes.resize(row_bytes * static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : values) v = normal(rng);
      tensor::quantize_row(type, values.data(), bytes.data() + row_bytes * static_cast<size_t>(r), cols);
    }
    info.name = "test";
    info.type = type;
    info.dims = {cols, rows};
    info.bytes = bytes.size();
    info.elements = cols * rows;
    info.data = bytes.data();
  }
};

std::vector<float> product(backend::CpuBackend& cpu, const HostTensor& w, std::vector<float>& x, int64_t n) {
  const backend::TensorView view = cpu.upload_weights(w.type, {w.dims[0], w.dims[1], 1, 1}, w.data);
  std::vector<float> y(static_cast<size_t>(w.dims[1] * n));
  backend::TensorView xv = backend::f32_matrix(x.data(), w.dims[0], n);
  backend::TensorView yv = backend::f32_matrix(y.data(), w.dims[1], n);
  cpu.matmul(view, xv, yv);
  return y;
}

class ShardedProduct : public ::testing::TestWithParam<tensor::DType> {};

// Row-parallel (the attention output and down projections): each rank multiplies its columns
// by its part of the input; the partial products sum to the whole product. Column-parallel
// (Q/K/V, gate, up): each rank's rows give its part of the output, exactly.
TEST_P(ShardedProduct, SlicesSumToTheWholeMatrixsProduct) {
  const tensor::DType type = GetParam();
  const int64_t block = tensor::dtype_info(type).block_elements;
  const int64_t cols = 6 * block + (block == 32 ? 3 * 64 : 0), rows = 96;
  std::mt19937 rng(7);
  QuantMatrix w(type, cols, rows, rng);
  backend::CpuBackend cpu(1);
  ShardBytes bytes;
  const int64_t split = (cols / block / 3) * block;  // an uneven split, on a block boundary
  for (int64_t n : {1, 3, 12}) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(cols * n));
    for (float& v : x) v = normal(rng);
    const std::vector<float> whole = product(cpu, {type, w.info.dims, w.info.data}, x, n);
    std::vector<float> x0, x1;
    for (int64_t t = 0; t < n; ++t) {
      x0.insert(x0.end(), x.begin() + t * cols, x.begin() + t * cols + split);
      x1.insert(x1.end(), x.begin() + t * cols + split, x.begin() + (t + 1) * cols);
    }
    const std::vector<float> y0 = product(cpu, bytes.columns(w.info, 0, split), x0, n);
    const std::vector<float> y1 = product(cpu, bytes.columns(w.info, split, cols - split), x1, n);
    for (size_t i = 0; i < whole.size(); ++i) {
      ASSERT_NEAR(y0[i] + y1[i], whole[i], 1e-4f * (1.0f + std::fabs(whole[i]))) << "n " << n << " at " << i;
    }
    const std::vector<float> top = product(cpu, bytes.rows(w.info, 40, 56), x, n);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = 0; r < 56; ++r) {
        ASSERT_EQ(top[static_cast<size_t>(t * 56 + r)], whole[static_cast<size_t>(t * rows + 40 + r)]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ShardedProduct,
                         ::testing::Values(tensor::DType::F32, tensor::DType::Q8_0, tensor::DType::Q4_1,
                                           tensor::DType::Q4_K, tensor::DType::Q6_K),
                         [](const auto& test) { return std::string(tensor::dtype_name(test.param)); });

TEST(ShardBytes, RefusesAColumnSplitInsideABlock) {
  std::mt19937 rng(1);
  QuantMatrix w(tensor::DType::Q4_K, 512, 4, rng);
  ShardBytes bytes;
  EXPECT_THROW(bytes.columns(w.info, 128, 384), Error);
  EXPECT_THROW(bytes.rows(w.info, 2, 3), Error);  // past the last row
}

}  // namespace
}  // namespace lumen::model
