// Attention sinks (AttentionConfig::sinks, gpt-oss): each head's sink logit joins the row's
// softmax as a key without a value, so the weights of the real keys sum to 1 - p(sink). Checked
// against a double-precision reference over the cache's own (rounded) values for both attention
// paths (the exact f16 one, whole and spread over key chunks, and the online one of an f32
// cache), every instruction-set level, one and two threads, with and without a sliding window,
// and sinks below, among and far above the scores (the online path's two ways of closing a
// row). Without the sinks the rows are far off (the test can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attention_tile_levels.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "paged_cache_fixture.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::tile_levels;

constexpr int64_t kHeadDim = 32, kHeads = 4, kKvHeads = 2, kBlock = 8;
constexpr int64_t kKvDim = kHeadDim * kKvHeads;
// Far below the scores (no effect), among them, above them, and far above (the sink takes
// nearly all the weight: the online path rescales its accumulator).
const std::vector<float> kSinks = {-30.0f, 0.5f, 3.0f, 25.0f};

struct Seq {
  int64_t context, n;
};

struct SinkBatch {
  std::vector<Seq> shape;
  PagedCache cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceSlice> slices;
  std::vector<float> q;
  int64_t rows = 0;
  int64_t window = 0;
  const float* sinks = kSinks.data();

  static int64_t blocks_for(const std::vector<Seq>& seqs) {
    int64_t blocks = 0;
    for (const Seq& s : seqs) blocks += (s.context + s.n + kBlock - 1) / kBlock;
    return blocks + 1;
  }

  SinkBatch(tensor::DType type, std::vector<Seq> seqs)
      : shape(std::move(seqs)), cache(type, kKvDim, kBlock, blocks_for(shape)) {
    std::mt19937 rng(11);
    int32_t next_block = 1;
    for (const Seq& s : shape) {
      std::vector<int32_t> table;
      const int64_t n_blocks = (s.context + s.n + kBlock - 1) / kBlock;
      for (int64_t b = 0; b < n_blocks; ++b) table.push_back(next_block++);
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
    c.sinks = sinks;
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

  // Sequence s's row r, head h, in double precision, with head h's sink in the softmax.
  std::vector<double> reference(size_t s, int64_t r, int64_t h) const {
    const std::vector<int32_t>& table = tables[s];
    const int64_t pos = shape[s].context + r, kv = h / (kHeads / kKvHeads);
    const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    const float* query = q.data() + ((slices[s].first_token + r) * kHeads + h) * kHeadDim;
    std::vector<double> scores;
    const double sink = kSinks[static_cast<size_t>(h)];
    double top = sink;
    for (int64_t p = lo; p <= pos; ++p) {
      double dot = 0.0;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        dot += static_cast<double>(query[d]) * cache.k_at(PagedCache::row_of(table, p, kBlock), kv * kHeadDim + d);
      }
      scores.push_back(dot * config().scale);
      top = std::max(top, scores.back());
    }
    double sum = std::exp(sink - top);
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

const std::vector<Seq> kMixed = {{13, 21}, {0, 30}, {40, 1}};
const std::vector<Seq> kLongDecode = {{700, 1}};  // the exact path spreads its keys over threads

double tolerance(tensor::DType type) { return type == tensor::DType::F16 ? 2e-3 : 1e-5; }

TEST(AttentionSinks, EachHeadsSinkJoinsItsSoftmax) {
  for (const int64_t window : {0, 5, 17}) {
    for (const auto& shape : {kMixed, kLongDecode}) {
      for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
        SinkBatch batch(type, shape);
        batch.window = window;
        for (const AttentionTileKernels* tiles : tile_levels()) {
          for (const unsigned threads : {1u, 2u}) {
            EXPECT_LT(batch.worst_difference(batch.run(*tiles, threads)), tolerance(type))
                << tensor::dtype_name(type) << " cache, window " << window << ", " << threads << " threads, "
                << shape.size() << " sequences";
          }
        }
      }
    }
  }
}

// The check can fail: without the sinks, the rows are far from the reference.
TEST(AttentionSinks, NoSinksWouldBeCaught) {
  for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
    SinkBatch batch(type, kMixed);
    batch.sinks = nullptr;
    EXPECT_GT(batch.worst_difference(batch.run(best_attention_tiles(), 2)), 1e-2) << tensor::dtype_name(type);
  }
}

}  // namespace
}  // namespace lumen::backend::cpu
