// attention_scores at every instruction-set level and thread count against a double-precision
// reference, on a prompt long enough to be split into several row blocks per KV head: each
// level within rounding of the reference, and 1 and 2 threads the same bits at each level
// (the row blocks and the order their partial columns are added in depend on the rows alone).
// On an f16 cache the scores are the attention's own f16-rounded probabilities
// (attention_score_columns.h); attention_scored_test.cc checks they are attention_scored's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kv_importance.h"
#include "kernel_test_util.h"
#include "paged_cache_fixture.h"
#include "tensor/fp16.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::random_values;

// SmolLM2's shape of heads (3 query heads per KV head, 64 dims), two KV heads.
constexpr int64_t kHeadDim = 64, kKvHeads = 2, kHeads = 6, kBlock = 16, kRow = kHeadDim * kKvHeads;

std::vector<std::pair<std::string, const AttentionTileKernels*>> levels() {
  std::vector<std::pair<std::string, const AttentionTileKernels*>> out = {{"portable", &portable_attention_tiles()}};
  if (avx2_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx2)
    out.emplace_back("avx2", avx2_attention_tiles());
  if (avx512_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx512) {
    out.emplace_back("avx512", avx512_attention_tiles());
  }
  return out;
}

struct Case {
  tensor::DType type;
  int64_t n_slots, n_tokens, first_row, window;
  float softcap;
};

void check_levels(const Case& c) {
  const int64_t n_blocks = (c.n_slots + kBlock - 1) / kBlock;
  PagedCache cache(c.type, kRow, kBlock, n_blocks + 3);
  std::vector<int32_t> table;
  for (int64_t b = 0; b < n_blocks; ++b) table.push_back(static_cast<int32_t>((b * 7 + 2) % (n_blocks + 3)));
  const std::vector<float> k = random_values(static_cast<size_t>(c.n_slots * kRow), 31, -1.0f, 1.0f);
  const std::vector<float> v(static_cast<size_t>(kRow), 0.0f);
  for (int64_t p = 0; p < c.n_slots; ++p)
    cache.write(PagedCache::row_of(table, p, kBlock), k.data() + p * kRow, v.data());
  std::vector<float> q = random_values(static_cast<size_t>(c.n_tokens * kHeads * kHeadDim), 32, -1.5f, 1.5f);
  const TensorView qv{tensor::DType::F32, {kHeadDim, kHeads, c.n_tokens, 1}, kHeadDim * sizeof(float), q.data()};
  const float scale = 1.0f / 8.0f;
  const AttentionConfig config{kHeads, kKvHeads, kHeadDim, scale, c.window, c.softcap, 0};
  const int64_t start = c.n_slots - c.n_tokens;
  const SequenceSlice seq{0, c.n_tokens, start, table};
  const int64_t stride = kKvHeads + 1;  // the extra column must stay as it was

  std::vector<double> expected(static_cast<size_t>(c.n_slots * stride), 0.5);
  std::vector<double> s(static_cast<size_t>(c.n_slots));
  for (int64_t r = c.first_row; r < c.n_tokens; ++r) {
    const int64_t pos = start + r, lo = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kvh = h / (kHeads / kKvHeads);
      double max = -1e300, sum = 0.0;
      for (int64_t p = lo; p <= pos; ++p) {
        double dot = 0.0;
        for (int64_t d = 0; d < kHeadDim; ++d) {
          // An f16 cache's scores are the attention's: its query rounded to f16 before q.k.
          float qd = q[static_cast<size_t>((r * kHeads + h) * kHeadDim + d)];
          if (c.type == tensor::DType::F16) qd = tensor::fp16_to_float(tensor::float_to_fp16(qd));
          dot += static_cast<double>(qd) * cache.k_at(PagedCache::row_of(table, p, kBlock), kvh * kHeadDim + d);
        }
        dot *= scale;
        if (c.softcap != 0.0f) dot = c.softcap * std::tanh(dot / c.softcap);
        s[static_cast<size_t>(p)] = dot;
        max = std::max(max, dot);
      }
      for (int64_t p = lo; p <= pos; ++p) sum += std::exp(s[static_cast<size_t>(p)] - max);
      for (int64_t p = lo; p <= pos; ++p) {
        expected[static_cast<size_t>(p * stride + kvh)] += std::exp(s[static_cast<size_t>(p)] - max) / sum;
      }
    }
  }

  for (const auto& [name, tiles] : levels()) {
    std::vector<std::vector<float>> by_threads;
    for (unsigned threads : {1u, 2u}) {
      std::vector<float> scores(static_cast<size_t>(c.n_slots * stride), 0.5f);
      ThreadPool pool(threads);
      attention_scores_with(*tiles, qv, cache.layer(), seq, c.first_row, config, scores.data(), stride, pool);
      // Sums of up to a few hundred probabilities: f32 rounding of each term and of the sum,
      // and on an f16 cache each probability rounded to f16 (2^-11 of itself) as P V uses it.
      const double relative = c.type == tensor::DType::F16 ? 5e-4 + 2e-5 : 2e-5;
      for (size_t i = 0; i < scores.size(); ++i) {
        ASSERT_NEAR(scores[i], expected[i], relative * std::max(1.0, std::abs(expected[i])))
            << name << ", " << threads << " threads, entry " << i;
      }
      by_threads.push_back(std::move(scores));
    }
    EXPECT_EQ(0, std::memcmp(by_threads[0].data(), by_threads[1].data(), by_threads[0].size() * sizeof(float)))
        << name << ": 1 and 2 threads differ";
  }
}

// 300 scored rows: 10 row blocks of 32 per KV head, and keys past a multiple of the tile sizes.
TEST(KvImportanceLevels, EveryLevelAndThreadCountMatchesTheReferenceOnAnF16Cache) {
  check_levels({tensor::DType::F16, 333, 310, 10, 0, 0.0f});
}

TEST(KvImportanceLevels, EveryLevelAndThreadCountMatchesTheReferenceOnAnF32Cache) {
  check_levels({tensor::DType::F32, 200, 200, 0, 0, 0.0f});
}

// Gemma's sliding-window layers and Gemma 2's soft cap.
TEST(KvImportanceLevels, EveryLevelKeepsTheSlidingWindowAndTheSoftCap) {
  check_levels({tensor::DType::F16, 261, 250, 3, 40, 30.0f});
}

}  // namespace
}  // namespace lumen::backend::cpu
