// Spans that attend both ways (SequenceSlice::key_ends: a Gemma 3 image's positions see each
// other): each row of a slice must attend to exactly the cache positions [window start, key
// end), checked against a double-precision reference over the cache's own (rounded) values, for
// both attention paths (the exact f16 one and the online one of an f32 cache), every
// instruction-set level, one and two threads, with and without a sliding window, spans that
// cross blocks and spans next to causal rows. The same batch without its key ends is far off
// (the test can fail), and malformed key ends are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_features.h"
#include "attention_tile_levels.h"
#include "paged_cache_fixture.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::tile_levels;

constexpr int64_t kHeadDim = 64, kHeads = 4, kKvHeads = 2, kBlock = 8;
constexpr int64_t kKvDim = kHeadDim * kKvHeads;

struct Span {
  int64_t first, n;  // rows of the slice
};

// One slice after `context` cached positions: n rows, the given spans attending both ways.
struct SpanBatch {
  PagedCache cache;
  std::vector<int32_t> table;
  std::vector<int32_t> key_ends;
  std::vector<SequenceSlice> slices;
  std::vector<float> q;
  int64_t context, n;
  int64_t window = 0;

  SpanBatch(tensor::DType type, int64_t context_, int64_t n_, const std::vector<Span>& spans)
      : cache(type, kKvDim, kBlock, 64), context(context_), n(n_) {
    std::mt19937 rng(11);
    for (int64_t b = 0; b * kBlock < context + n; ++b) table.push_back(static_cast<int32_t>(2 * b + 1));  // not 0, 1, 2
    for (int64_t p = 0; p < context + n; ++p) {
      const std::vector<float> k = testing::random_values(kKvDim, static_cast<uint32_t>(rng()));
      const std::vector<float> v = testing::random_values(kKvDim, static_cast<uint32_t>(rng()));
      cache.write(PagedCache::row_of(table, p, kBlock), k.data(), v.data());
    }
    for (int64_t r = 0; r < n; ++r) {
      const std::vector<float> row =
          testing::random_values(kHeadDim * kHeads, static_cast<uint32_t>(rng()), -3.0f, 3.0f);
      q.insert(q.end(), row.begin(), row.end());
      key_ends.push_back(static_cast<int32_t>(context + r + 1));
    }
    for (const Span& s : spans) {
      for (int64_t r = s.first; r < s.first + s.n; ++r) {
        key_ends[static_cast<size_t>(r)] = static_cast<int32_t>(context + s.first + s.n);
      }
    }
    slices.push_back({0, n, context, table, {}, {}, key_ends});
  }

  AttentionConfig config() const {
    AttentionConfig c;
    c.n_heads = kHeads;
    c.n_kv_heads = kKvHeads;
    c.head_dim = kHeadDim;
    c.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    c.sliding_window = window;
    return c;
  }

  std::vector<float> run(const AttentionTileKernels& tiles, unsigned threads) {
    ThreadPool pool(threads);
    AttentionScratch scratch;
    std::vector<float> out(static_cast<size_t>(kHeadDim * kHeads * n), std::nanf(""));
    const TensorView qt{tensor::DType::F32, {kHeadDim, kHeads, n, 1}, kHeadDim * 4, q.data()};
    TensorView ot{tensor::DType::F32, {kHeadDim, kHeads, n, 1}, kHeadDim * 4, out.data()};
    attention_with(tiles, qt, cache.layer(), slices, config(), ot, pool, scratch);
    return out;
  }

  // Row r, head h, in double precision: keys [max(0, pos - window + 1), key_ends[r]).
  std::vector<double> reference(int64_t r, int64_t h) const {
    const int64_t pos = context + r, kv = h / (kHeads / kKvHeads);
    const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    const int64_t end = key_ends[static_cast<size_t>(r)];
    const float* query = q.data() + (r * kHeads + h) * kHeadDim;
    std::vector<double> scores;
    double top = -INFINITY;
    for (int64_t p = lo; p < end; ++p) {
      double s = 0.0;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        s += static_cast<double>(query[d]) * cache.k_at(PagedCache::row_of(table, p, kBlock), kv * kHeadDim + d);
      }
      scores.push_back(s * config().scale);
      top = std::max(top, scores.back());
    }
    double sum = 0.0;
    for (double& s : scores) sum += (s = std::exp(s - top));
    std::vector<double> out(kHeadDim, 0.0);
    for (int64_t p = lo; p < end; ++p) {
      const double w = scores[static_cast<size_t>(p - lo)] / sum;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        out[static_cast<size_t>(d)] += w * cache.v_at(PagedCache::row_of(table, p, kBlock), kv * kHeadDim + d);
      }
    }
    return out;
  }

  double worst_difference(const std::vector<float>& out) const {
    double worst = 0.0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t h = 0; h < kHeads; ++h) {
        const std::vector<double> want = reference(r, h);
        for (int64_t d = 0; d < kHeadDim; ++d) {
          const double diff =
              std::abs(out[static_cast<size_t>((r * kHeads + h) * kHeadDim + d)] - want[static_cast<size_t>(d)]);
          if (!(diff <= worst)) worst = std::isnan(diff) ? INFINITY : diff;
        }
      }
    }
    return worst;
  }
};

// Two spans crossing block boundaries, causal rows before, between and after them; the second
// ends the slice (an image at the end of a chunk).
const std::vector<Span> kSpans = {{3, 9}, {15, 6}};
constexpr int64_t kContext = 13, kRows = 21;

// The exact f16 path rounds its probabilities to f16 (as llama.cpp does); the online f32 path
// does not.
double tolerance(tensor::DType type) { return type == tensor::DType::F16 ? 2e-3 : 1e-5; }

TEST(AttentionSpans, EachRowSeesItsWholeSpan) {
  for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
    SpanBatch batch(type, kContext, kRows, kSpans);
    for (const AttentionTileKernels* tiles : tile_levels()) {
      for (const unsigned threads : {1u, 2u}) {
        EXPECT_LT(batch.worst_difference(batch.run(*tiles, threads)), tolerance(type))
            << tensor::dtype_name(type) << " cache, " << threads << " threads";
      }
    }
  }
}

// A sliding window still counts back from each row's own position; keys later in its span are
// seen whatever the window (Gemma 3's local layers: an image is shorter than the window there,
// but the kernel must not depend on it).
TEST(AttentionSpans, ASlidingWindowCountsBackFromTheRow) {
  for (const int64_t window : {4, 10, 40}) {
    for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
      SpanBatch batch(type, kContext, kRows, kSpans);
      batch.window = window;
      for (const AttentionTileKernels* tiles : tile_levels()) {
        EXPECT_LT(batch.worst_difference(batch.run(*tiles, 2)), tolerance(type))
            << tensor::dtype_name(type) << " cache, window " << window;
      }
    }
  }
}

// The check can fail: computed causally, the spans' rows are far from the reference.
TEST(AttentionSpans, CausalRowsWouldBeCaught) {
  SpanBatch batch(tensor::DType::F32, kContext, kRows, kSpans);
  batch.slices[0].key_ends = {};
  EXPECT_GT(batch.worst_difference(batch.run(best_attention_tiles(), 2)), 1e-2);
}

TEST(AttentionSpans, MalformedKeyEndsAreRefused) {
  SpanBatch batch(tensor::DType::F16, kContext, kRows, kSpans);
  ThreadPool pool(1);
  AttentionScratch scratch;
  std::vector<float> out(batch.q.size());
  const TensorView qt{tensor::DType::F32, {kHeadDim, kHeads, kRows, 1}, kHeadDim * 4, batch.q.data()};
  TensorView ot{tensor::DType::F32, {kHeadDim, kHeads, kRows, 1}, kHeadDim * 4, out.data()};
  auto run_with = [&](std::vector<int32_t> ends, std::span<const uint8_t> visible = {}) {
    auto slices = batch.slices;
    slices[0].key_ends = ends;
    slices[0].visible = visible;
    attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch);
  };
  EXPECT_NO_THROW(run_with(batch.key_ends));
  std::vector<int32_t> ends = batch.key_ends;
  ends.pop_back();  // not one per row
  EXPECT_THROW(run_with(ends), Error);
  ends = batch.key_ends;
  ends[5] = static_cast<int32_t>(kContext + 5);  // row 5 would not see itself
  EXPECT_THROW(run_with(ends), Error);
  ends = batch.key_ends;
  ends[5] = static_cast<int32_t>(kContext + kRows + 1);  // past the slice's rows
  EXPECT_THROW(run_with(ends), Error);
  const std::vector<uint8_t> causal_tree = [] {
    std::vector<uint8_t> m(static_cast<size_t>(kRows * kRows), 0);
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j <= i; ++j) m[static_cast<size_t>(i * kRows + j)] = 1;
    }
    return m;
  }();
  EXPECT_THROW(run_with(batch.key_ends, causal_tree), Error);  // never with a tree mask
}

}  // namespace
}  // namespace lumen::backend::cpu
