// ALiBi (AttentionConfig::alibi_max_bias): each head's scores gain slope_h * -|query - key|,
// with llama.cpp's slopes. Checked against a double-precision reference over the cache's own
// (rounded) values and slopes computed here from the formula, for both attention paths (the
// exact f16 one, whole and spread over key chunks, and the online one of an f32 cache), every
// instruction-set level, one and two threads, sequences that cross blocks, a head count that is
// not a power of two (the second slope series), with and without a sliding window. The same
// batch without the bias is far off (the test can fail), and a bad max bias is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attention_tile_levels.h"
#include "backend/common/alibi.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "paged_cache_fixture.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::tile_levels;

constexpr int64_t kHeadDim = 32, kHeads = 6, kKvHeads = 2, kBlock = 8;
constexpr int64_t kKvDim = kHeadDim * kKvHeads;
constexpr float kMaxBias = 8.0f;

// The slope of head h of n, in double, from the formula (backend/common/alibi.h says why).
double reference_slope(int64_t n, int64_t h, double max_bias) {
  int64_t n2 = 1;
  while (n2 * 2 <= n) n2 *= 2;
  return h < n2 ? std::pow(2.0, -max_bias * static_cast<double>(h + 1) / static_cast<double>(n2))
                : std::pow(2.0, -max_bias / 2.0 * static_cast<double>(2 * (h - n2) + 1) / static_cast<double>(n2));
}

struct Seq {
  int64_t context, n;  // cached positions before its rows, and its rows
};

struct AlibiBatch {
  std::vector<Seq> shape;
  PagedCache cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceSlice> slices;
  std::vector<float> q;
  int64_t rows = 0;
  int64_t window = 0;
  float max_bias = kMaxBias;

  static int64_t blocks_for(const std::vector<Seq>& seqs) {
    int64_t blocks = 0;
    for (const Seq& s : seqs) blocks += (s.context + s.n + kBlock - 1) / kBlock;
    return 2 * blocks + 2;
  }

  AlibiBatch(tensor::DType type, std::vector<Seq> seqs)
      : shape(std::move(seqs)), cache(type, kKvDim, kBlock, blocks_for(shape)) {
    std::mt19937 rng(5);
    int32_t next_block = 1;
    for (const Seq& s : shape) {
      std::vector<int32_t> table;
      // Every other block, in reverse order: a kernel that assumes contiguous blocks fails.
      const int64_t n_blocks = (s.context + s.n + kBlock - 1) / kBlock;
      for (int64_t b = 0; b < n_blocks; ++b) table.push_back(next_block + 2 * static_cast<int32_t>(n_blocks - 1 - b));
      next_block += 2 * static_cast<int32_t>(n_blocks);
      for (int64_t p = 0; p < s.context + s.n; ++p) {
        const std::vector<float> k = testing::random_values(kKvDim, static_cast<uint32_t>(rng()));
        const std::vector<float> v = testing::random_values(kKvDim, static_cast<uint32_t>(rng()));
        cache.write(PagedCache::row_of(table, p, kBlock), k.data(), v.data());
      }
      for (int64_t r = 0; r < s.n; ++r) {
        const std::vector<float> row =
            testing::random_values(kHeadDim * kHeads, static_cast<uint32_t>(rng()), -2.0f, 2.0f);
        q.insert(q.end(), row.begin(), row.end());
      }
      tables.push_back(std::move(table));
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      slices.push_back({rows, shape[i].n, shape[i].context, tables[i]});
      rows += shape[i].n;
    }
  }

  AttentionConfig config() const {
    AttentionConfig c;
    c.n_heads = kHeads;
    c.n_kv_heads = kKvHeads;
    c.head_dim = kHeadDim;
    c.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    c.sliding_window = window;
    c.alibi_max_bias = max_bias;
    return c;
  }

  std::vector<float> run(const AttentionTileKernels& tiles, unsigned threads) {
    ThreadPool pool(threads);
    AttentionScratch scratch;
    std::vector<float> out(static_cast<size_t>(kHeadDim * kHeads * rows), std::nanf(""));
    const TensorView qt{tensor::DType::F32, {kHeadDim, kHeads, rows, 1}, kHeadDim * 4, q.data()};
    TensorView ot{tensor::DType::F32, {kHeadDim, kHeads, rows, 1}, kHeadDim * 4, out.data()};
    attention_with(tiles, qt, cache.layer(), slices, config(), ot, pool, scratch);
    return out;
  }

  // Sequence s's row r, head h, in double precision, with the bias at kMaxBias.
  std::vector<double> reference(size_t s, int64_t r, int64_t h) const {
    const std::vector<int32_t>& table = tables[s];
    const int64_t pos = shape[s].context + r, kv = h / (kHeads / kKvHeads);
    const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    const double slope = reference_slope(kHeads, h, kMaxBias);
    const float* query = q.data() + ((slices[s].first_token + r) * kHeads + h) * kHeadDim;
    std::vector<double> scores;
    double top = -INFINITY;
    for (int64_t p = lo; p <= pos; ++p) {
      double dot = 0.0;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        dot += static_cast<double>(query[d]) * cache.k_at(PagedCache::row_of(table, p, kBlock), kv * kHeadDim + d);
      }
      scores.push_back(dot * config().scale - slope * static_cast<double>(pos - p));
      top = std::max(top, scores.back());
    }
    double sum = 0.0;
    for (double& x : scores) sum += (x = std::exp(x - top));
    std::vector<double> out(kHeadDim, 0.0);
    for (int64_t p = lo; p <= pos; ++p) {
      const double w = scores[static_cast<size_t>(p - lo)] / sum;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        out[static_cast<size_t>(d)] += w * cache.v_at(PagedCache::row_of(table, p, kBlock), kv * kHeadDim + d);
      }
    }
    return out;
  }

  double worst_difference(const std::vector<float>& out) const {
    double worst = 0.0;
    for (size_t s = 0; s < shape.size(); ++s) {
      for (int64_t r = 0; r < shape[s].n; ++r) {
        for (int64_t h = 0; h < kHeads; ++h) {
          const std::vector<double> want = reference(s, r, h);
          const int64_t row = slices[s].first_token + r;
          for (int64_t d = 0; d < kHeadDim; ++d) {
            const double diff =
                std::abs(out[static_cast<size_t>((row * kHeads + h) * kHeadDim + d)] - want[static_cast<size_t>(d)]);
            if (!(diff <= worst)) worst = std::isnan(diff) ? INFINITY : diff;
          }
        }
      }
    }
    return worst;
  }
};

// A prefill after a cached context, a fresh prompt and a decode row: blocks crossed everywhere.
const std::vector<Seq> kMixed = {{13, 21}, {0, 30}, {40, 1}};
// One decode row at a long context: the exact path spreads its keys over the threads in chunks.
const std::vector<Seq> kLongDecode = {{700, 1}};

// The exact f16 path rounds its probabilities to f16 (as llama.cpp does); the online f32 path
// does not.
double tolerance(tensor::DType type) { return type == tensor::DType::F16 ? 2e-3 : 1e-5; }

TEST(AttentionAlibi, SlopesFollowLlamaCppsFormula) {
  // Eight heads at max bias 8: the paper's 1/2, 1/4, ... 1/256.
  for (int64_t h = 0; h < 8; ++h) {
    EXPECT_FLOAT_EQ(common::alibi_slope(8.0f, 8, h), std::ldexp(1.0f, -static_cast<int>(h + 1)));
  }
  // Six heads: 4 of the first series (2^-2 steps), then 2^-1 and 2^-3 from the second.
  const float six[] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f};
  for (int64_t h = 0; h < 6; ++h) EXPECT_FLOAT_EQ(common::alibi_slope(8.0f, 6, h), six[h]) << h;
  EXPECT_EQ(common::alibi_slope(0.0f, 6, 3), 0.0f);
}

TEST(AttentionAlibi, ScoresGainEachHeadsBias) {
  for (const auto& shape : {kMixed, kLongDecode}) {
    for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
      AlibiBatch batch(type, shape);
      for (const AttentionTileKernels* tiles : tile_levels()) {
        for (const unsigned threads : {1u, 2u}) {
          EXPECT_LT(batch.worst_difference(batch.run(*tiles, threads)), tolerance(type))
              << tensor::dtype_name(type) << " cache, " << threads << " threads, " << shape.size() << " sequences";
        }
      }
    }
  }
}

TEST(AttentionAlibi, WithASlidingWindow) {
  for (const int64_t window : {5, 17, 300}) {
    for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
      for (const auto& shape : {kMixed, kLongDecode}) {
        AlibiBatch batch(type, shape);
        batch.window = window;
        for (const AttentionTileKernels* tiles : tile_levels()) {
          EXPECT_LT(batch.worst_difference(batch.run(*tiles, 2)), tolerance(type))
              << tensor::dtype_name(type) << " cache, window " << window;
        }
      }
    }
  }
}

// The check can fail: without the bias, the rows are far from the reference.
TEST(AttentionAlibi, NoBiasWouldBeCaught) {
  for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
    AlibiBatch batch(type, kMixed);
    batch.max_bias = 0.0f;
    EXPECT_GT(batch.worst_difference(batch.run(best_attention_tiles(), 2)), 1e-2) << tensor::dtype_name(type);
  }
}

TEST(AttentionAlibi, ABadMaxBiasIsRefused) {
  for (const float bad : {-1.0f, INFINITY, NAN}) {
    AlibiBatch batch(tensor::DType::F16, kMixed);
    batch.max_bias = bad;
    EXPECT_THROW(batch.run(best_attention_tiles(), 1), Error) << bad;
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
