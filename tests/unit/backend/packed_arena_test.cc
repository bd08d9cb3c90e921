// PackedArena: aligned, disjoint spans back to back in large chunks; and packed matrices placed
// in one give the same results as matrices packed into memory of their own.
#include "backend/cpu/packed_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_packed.h"
#include "tensor/quantize.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {
namespace {

TEST(PackedArena, HandsOutAlignedDisjointSpansBackToBack) {
  PackedArena arena;
  const std::vector<size_t> sizes = {1, 100, 64, 187392, 3, 498688};
  std::vector<uint8_t*> spans;
  size_t rounded_total = 0;
  for (const size_t size : sizes) {
    uint8_t* p = arena.allocate(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % PackedArena::kAlignment, 0u);
    std::memset(p, static_cast<int>(spans.size() + 1), size);  // writable, whole
    if (!spans.empty()) {
      // The next span starts right after the previous one, rounded up to the alignment.
      const size_t previous = (sizes[spans.size() - 1] + 63) / 64 * 64;
      EXPECT_EQ(p, spans.back() + previous);
    }
    spans.push_back(p);
    rounded_total += (size + 63) / 64 * 64;
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(spans[i][0], static_cast<uint8_t>(i + 1));
    EXPECT_EQ(spans[i][sizes[i] - 1], static_cast<uint8_t>(i + 1)) << "span " << i << " overwritten";
  }
  EXPECT_EQ(arena.used_bytes(), rounded_total);
  EXPECT_EQ(arena.reserved_bytes(), PackedArena::kChunkBytes);
}

TEST(PackedArena, ARequestPastTheChunkGetsAChunkOfItsOwn) {
  PackedArena arena;
  uint8_t* small = arena.allocate(1000);
  const size_t big = PackedArena::kChunkBytes + 5;
  uint8_t* large = arena.allocate(big);
  ASSERT_NE(large, nullptr);
  large[0] = 1;
  large[big - 1] = 2;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % PackedArena::kAlignment, 0u);
  EXPECT_TRUE(large + big <= small || small + 1000 <= large);
  // Rounded up to whole 2 MiB pages.
  EXPECT_EQ(arena.reserved_bytes(), PackedArena::kChunkBytes + PackedArena::kChunkBytes + (size_t{2} << 20));
  // The big chunk's rounding to whole pages left room after the big span: the next small
  // request goes there, a bigger one into a third chunk.
  EXPECT_EQ(arena.allocate(64), large + (big + 63) / 64 * 64);
  arena.allocate(size_t{2} << 20);
  EXPECT_EQ(arena.reserved_bytes(), 3 * PackedArena::kChunkBytes + (size_t{2} << 20));
}

// A rows x cols matrix of `type` from random values.
std::vector<uint8_t> random_matrix(tensor::DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const size_t row_bytes = *tensor::row_bytes(type, cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(rows));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng);
    tensor::quantize_row(type, row.data(), bytes.data() + row_bytes * static_cast<size_t>(r), cols);
  }
  return bytes;
}

TEST(PackedArena, MatricesPackedIntoItMultiplyAsTheirOwnCopies) {
  if (!packing_pays_off(tensor::DType::Q4_1)) GTEST_SKIP() << "no packed kernels on this CPU";
  ThreadPool pool(2);
  MatmulScratch scratch;
  PackedArena arena;
  struct Shape {
    tensor::DType type;
    int64_t rows, cols;
  };
  const Shape shapes[] = {{tensor::DType::Q4_1, 576, 576}, {tensor::DType::Q4_0, 53, 256},
                          {tensor::DType::Q8_0, 1536, 576}, {tensor::DType::Q4_K, 40, 512}};
  const int64_t n_tokens = 3;
  for (const Shape& s : shapes) {
    if (!packing_pays_off(s.type)) continue;
    const std::vector<uint8_t> bytes = random_matrix(s.type, s.rows, s.cols, static_cast<uint32_t>(s.rows));
    WeightMatrix w{s.type, s.rows, s.cols, bytes.data(), *tensor::row_bytes(s.type, s.cols)};
    const PackedWeights own(w, pool);
    const PackedWeights shared(w, pool, arena);
    ASSERT_EQ(own.bytes(), shared.bytes());
    EXPECT_EQ(std::memcmp(own.group(0), shared.group(0), own.bytes()), 0) << tensor::dtype_name(s.type);
    std::vector<float> x(static_cast<size_t>(s.cols * n_tokens));
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    std::vector<float> y_own(static_cast<size_t>(s.rows * n_tokens)), y_shared(y_own.size());
    w.packed = &own;
    matmul(w, x.data(), s.cols, n_tokens, y_own.data(), s.rows, pool, scratch);
    w.packed = &shared;
    matmul(w, x.data(), s.cols, n_tokens, y_shared.data(), s.rows, pool, scratch);
    EXPECT_EQ(y_own, y_shared) << tensor::dtype_name(s.type);
  }
  EXPECT_GT(arena.used_bytes(), 0u);
}

}  // namespace
}  // namespace lumen::backend::cpu
