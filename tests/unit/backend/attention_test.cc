// Paged causal attention against a plain f64 softmax(q k^T) v, computed per query from the
// test's own copy of the cache. Covers head sizes 64/80/128/256, GQA 9/3, MQA and MHA, f16 and
// f32 caches, several sequences with different block tables in one batch (prefill, continued
// prefill, decode), partially filled blocks, odd block sizes, sliding windows and softcaps, on
// 1 and 3 threads with every instruction-set level this CPU has, and a few queries over a long
// context (the exact f16 path's keys spread over tasks chunk by chunk).
//
// Tolerance: 2e-6 absolute on outputs of magnitude <= 1 for an f32 cache (f32 dot products and
// online softmax against f64). For an f16 cache the reference rounds q and the probabilities to
// f16, the documented contract (llama.cpp's default attention does the same); a probability
// computed in f32 can land on the other side of an f16 rounding boundary than the f64 one, one
// f16 step (2^-11 of p) per such key, so the bound there is kF16Tolerance. Two mutation checks show the comparison would catch a wrong causal mask or a
// wrong GQA head mapping: both change outputs by orders of magnitude more than the tolerance.
// Latent shapes (multi-head latent attention) have values narrower than keys, read from the
// leading part of each key row through a V view of the K memory (backend::values_in_keys).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_features.h"
#include "paged_cache_fixture.h"
#include "util/error.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;

struct Shape {
  std::string name;
  int64_t head_dim, n_heads, n_kv_heads, block_size;
  int64_t window = 0;
  float softcap = 0.0f;
  std::vector<std::pair<int64_t, int64_t>> seqs = {{0, 33}, {93, 7}, {6, 1}, {0, 1}};  // (start, n)
  int64_t value_dim = 0;  // > 0: values are the first value_dim of each key row (one KV head)

  int64_t values() const { return value_dim != 0 ? value_dim : head_dim; }
};

enum class Mutation { None, PeekOneAhead, WrongHeadMapping };

struct Batch {
  Shape shape;
  PagedCache cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceSlice> slices;
  std::vector<float> q;
  int64_t n_tokens = 0;

  Batch(const Shape& s, tensor::DType type)
      : shape(s), cache(type, s.head_dim * s.n_kv_heads, s.block_size, blocks_for(s)) {
    std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 131 + s.n_heads));
    // Hand out the blocks in a shuffled order so each sequence's blocks are scattered.
    std::vector<int32_t> ids(static_cast<size_t>(blocks_for(s)));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t next = 0;
    const int64_t kv_dim = s.head_dim * s.n_kv_heads;
    for (const auto& [start, n] : s.seqs) {
      const int64_t blocks = (start + n + s.block_size - 1) / s.block_size;
      tables.emplace_back(ids.begin() + static_cast<long>(next), ids.begin() + static_cast<long>(next + blocks));
      next += static_cast<size_t>(blocks);
      for (int64_t pos = 0; pos < start + n; ++pos) {
        const auto k = testing::random_values(static_cast<size_t>(kv_dim), static_cast<uint32_t>(rng()));
        const auto v = testing::random_values(static_cast<size_t>(kv_dim), static_cast<uint32_t>(rng()));
        cache.write(PagedCache::row_of(tables.back(), pos, s.block_size), k.data(), v.data());
      }
    }
    if (s.value_dim != 0) {  // the latent layout: V is a view of K's memory
      cache.layer().v = cache.layer().k;
      cache.layer().v.dims[0] = s.value_dim;
    }
    for (size_t i = 0; i < s.seqs.size(); ++i) {
      slices.push_back({n_tokens, s.seqs[i].second, s.seqs[i].first, tables[i]});
      n_tokens += s.seqs[i].second;
    }
    q = testing::random_values(static_cast<size_t>(s.head_dim * s.n_heads * n_tokens), 99, -3.0f, 3.0f);
  }

  static int64_t blocks_for(const Shape& s) {
    int64_t total = 3;  // a few blocks nobody uses
    for (const auto& [start, n] : s.seqs) total += (start + n + s.block_size - 1) / s.block_size;
    return total;
  }

  AttentionConfig config() const {
    AttentionConfig c;
    c.n_heads = shape.n_heads;
    c.n_kv_heads = shape.n_kv_heads;
    c.head_dim = shape.head_dim;
    c.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
    c.sliding_window = shape.window;
    c.softcap = shape.softcap;
    c.value_dim = shape.value_dim;
    return c;
  }

  std::vector<double> reference(Mutation mutation) const {
    const int64_t dim = shape.head_dim, vdim = shape.values(), group = shape.n_heads / shape.n_kv_heads;
    const AttentionConfig c = config();
    std::vector<double> out(static_cast<size_t>(vdim * shape.n_heads * n_tokens), 0.0);
    for (size_t si = 0; si < slices.size(); ++si) {
      const SequenceSlice& seq = slices[si];
      const int64_t seq_end = seq.start_pos + seq.n_tokens;
      for (int64_t i = 0; i < seq.n_tokens; ++i) {
        const int64_t pos = seq.start_pos + i;
        const int64_t hi = mutation == Mutation::PeekOneAhead ? std::min(pos + 1, seq_end - 1) : pos;
        const int64_t lo = shape.window > 0 ? std::max<int64_t>(0, pos - shape.window + 1) : 0;
        for (int64_t h = 0; h < shape.n_heads; ++h) {
          const int64_t kvh = mutation == Mutation::WrongHeadMapping ? h % shape.n_kv_heads : h / group;
          const float* qv = q.data() + ((seq.first_token + i) * shape.n_heads + h) * dim;
          std::vector<double> scores;
          for (int64_t p = lo; p <= hi; ++p) {
            const int64_t row = PagedCache::row_of(tables[si], p, shape.block_size);
            double dot = 0.0;
            for (int64_t d = 0; d < dim; ++d) {
              const double qd = cache.type() == tensor::DType::F16 ? testing::round_to_f16(qv[d]) : qv[d];
              dot += qd * cache.k_at(row, kvh * dim + d);
            }
            double s = dot * c.scale;
            if (c.softcap != 0.0f) s = c.softcap * std::tanh(s / c.softcap);
            scores.push_back(s);
          }
          const double mx = *std::max_element(scores.begin(), scores.end());
          double total = 0.0;
          for (double& s : scores) total += (s = std::exp(s - mx));
          double* o = out.data() + ((seq.first_token + i) * shape.n_heads + h) * vdim;
          for (int64_t p = lo; p <= hi; ++p) {
            const int64_t row = PagedCache::row_of(tables[si], p, shape.block_size);
            double w = scores[static_cast<size_t>(p - lo)] / total;
            // With an f16 V, probabilities are rounded to f16 (llama.cpp's default path).
            if (cache.type() == tensor::DType::F16) w = testing::round_to_f16(static_cast<float>(w));
            for (int64_t d = 0; d < vdim; ++d) {
              o[d] += w * (shape.value_dim != 0 ? cache.k_at(row, d) : cache.v_at(row, kvh * dim + d));
            }
          }
        }
      }
    }
    return out;
  }

  std::vector<float> run(const AttentionTileKernels& tiles, unsigned threads) {
    ThreadPool pool(threads);
    AttentionScratch scratch;
    std::vector<float> out(static_cast<size_t>(shape.values() * shape.n_heads * n_tokens), std::nanf(""));
    const TensorView qt{tensor::DType::F32, {shape.head_dim, shape.n_heads, n_tokens, 1},
                        static_cast<size_t>(shape.head_dim) * 4, q.data()};
    const TensorView ot{tensor::DType::F32, {shape.values(), shape.n_heads, n_tokens, 1},
                        static_cast<size_t>(shape.values()) * 4, out.data()};
    TensorView target = ot;
    attention_with(tiles, qt, cache.layer(), slices, config(), target, pool, scratch);
    return out;
  }
};

double max_difference(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(got[i] - want[i]);
    if (!(diff <= worst)) worst = std::isnan(diff) ? INFINITY : diff;
  }
  return worst;
}

std::vector<std::pair<std::string, const AttentionTileKernels*>> tile_levels() {
  std::vector<std::pair<std::string, const AttentionTileKernels*>> levels = {{"portable", &portable_attention_tiles()}};
  if (avx2_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx2) {
    levels.emplace_back("avx2", avx2_attention_tiles());
  }
  if (avx512_attention_tiles() != nullptr && detected_isa() >= Isa::kAvx512) {
    levels.emplace_back("avx512", avx512_attention_tiles());
  }
  return levels;
}

constexpr double kF16Tolerance = 2e-3;

class Attention : public ::testing::TestWithParam<Shape> {};

TEST_P(Attention, MatchesReference) {
  for (const tensor::DType type : {tensor::DType::F16, tensor::DType::F32}) {
    Batch batch(GetParam(), type);
    const auto want = batch.reference(Mutation::None);
    for (const auto& [level, tiles] : tile_levels()) {
      for (const unsigned threads : {1u, 3u}) {
        const auto got = batch.run(*tiles, threads);
        EXPECT_LT(max_difference(got, want), type == tensor::DType::F16 ? kF16Tolerance : 2e-6)
            << tensor::dtype_name(type) << " cache, " << level << ", " << threads << " threads";
      }
    }
  }
}

const Shape kShapes[] = {
    {"gqa9x3_d64", 64, 9, 3, 16},
    {"gqa9x3_d80", 80, 9, 3, 16},
    {"gqa9x3_d128", 128, 9, 3, 16},
    {"gqa9x3_d256", 256, 9, 3, 16},
    {"mqa8x1_d128_block7", 128, 8, 1, 7},
    {"mha4_d64_block32", 64, 4, 4, 32},
    {"window5", 64, 9, 3, 16, 5},
    {"window20_long", 64, 9, 3, 16, 20, 0.0f, {{0, 100}, {40, 3}}},
    {"softcap", 80, 9, 3, 16, 0, 2.0f},
    {"window_and_softcap", 128, 4, 2, 8, 9, 30.0f, {{0, 7}, {0, 33}, {99, 1}}},
    {"single_decode", 64, 9, 3, 16, 0, 0.0f, {{250, 1}}},
    // One sequence's few queries over several key chunks: on 3 threads the f16 path spreads the
    // chunks over tasks (attention_exact.h), on 1 thread it walks them in one task.
    {"long_decode", 64, 9, 3, 16, 0, 0.0f, {{700, 1}}},
    {"long_verify_rows", 64, 9, 3, 16, 0, 0.0f, {{590, 6}}},
    {"long_decode_window300_softcap", 64, 4, 1, 16, 300, 30.0f, {{800, 1}}},
    {"long_latent_decode", 96, 8, 1, 16, 0, 0.0f, {{520, 2}}, 64},
    // Several sequences spread at once, with different numbers of chunks each.
    {"mqa_three_long_sequences", 64, 4, 1, 16, 0, 0.0f, {{600, 2}, {300, 1}, {0, 5}}},
    // DeepSeek-V2's latent rows: 512 latent + 64 rope, 16 heads on the one row, values the latent.
    {"latent576_16heads", 576, 16, 1, 16, 0, 0.0f, {{0, 33}, {93, 7}, {0, 1}}, 512},
    {"latent48_block5", 48, 4, 1, 5, 0, 0.0f, {{0, 17}, {30, 4}, {6, 1}}, 32},
};

INSTANTIATE_TEST_SUITE_P(Shapes, Attention, ::testing::ValuesIn(kShapes),
                         [](const auto& test_info) { return test_info.param.name; });

TEST(AttentionMutations, WrongMaskOrHeadMappingWouldFail) {
  Batch batch(kShapes[0], tensor::DType::F32);
  const auto got = batch.run(best_attention_tiles(), 2);
  EXPECT_LT(max_difference(got, batch.reference(Mutation::None)), 2e-6);
  EXPECT_GT(max_difference(got, batch.reference(Mutation::PeekOneAhead)), 1e-2);
  EXPECT_GT(max_difference(got, batch.reference(Mutation::WrongHeadMapping)), 1e-2);
}

TEST(AttentionErrors, RejectsInconsistentInputs) {
  Batch batch(kShapes[0], tensor::DType::F16);
  ThreadPool pool(1);
  AttentionScratch scratch;
  std::vector<float> out(batch.q.size());
  const TensorView qt{tensor::DType::F32, {64, 9, batch.n_tokens, 1}, 64 * 4, batch.q.data()};
  TensorView ot = qt;
  ot.data = out.data();
  AttentionConfig c = batch.config();
  c.n_kv_heads = 2;  // 9 heads do not split over 2
  EXPECT_THROW(attention(qt, batch.cache.layer(), batch.slices, c, ot, pool, scratch), Error);
  c = batch.config();
  c.head_dim = 32;
  EXPECT_THROW(attention(qt, batch.cache.layer(), batch.slices, c, ot, pool, scratch), Error);
  auto slices = batch.slices;
  const std::vector<int32_t> short_table = {0};
  slices[1].block_table = short_table;
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
  slices = batch.slices;
  slices[0].n_tokens = batch.n_tokens + 1;
  EXPECT_THROW(attention(qt, batch.cache.layer(), slices, batch.config(), ot, pool, scratch), Error);
}

}  // namespace
}  // namespace lumen::backend::cpu
