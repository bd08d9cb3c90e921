// attention_scored on the CPU: the scores come from the exact f16 path's own probabilities, so
// they must be bit for bit what the separate attention_scores gives, the attention's output bit
// for bit what plain attention gives, and both the same at 1, 2 and 3 threads and at every
// instruction-set level, for a batch that mixes scored and unscored sequences, prompt chunks
// spanning several row and key chunks, and decode rows whose keys are spread over the pool
// (the split path).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kv_importance.h"
#include "attention_tile_levels.h"
#include "kernel_test_util.h"
#include "paged_cache_fixture.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {
namespace {

using testing::PagedCache;
using testing::random_values;

constexpr int64_t kHeadDim = 64, kBlock = 16;

struct Shape {
  int64_t heads, kv_heads, window;
  float softcap;
  tensor::DType type;
};

struct Seq {
  int64_t n_tokens, start_pos;
};

struct Result {
  std::vector<float> out;
  std::vector<std::vector<float>> scores;  // per target
};

class Batch {
 public:
  Batch(const Shape& shape, const std::vector<Seq>& seqs) : shape_(shape) {
    const int64_t row = kHeadDim * shape.kv_heads;
    int64_t blocks = 0, tokens = 0;
    for (const Seq& s : seqs) blocks += (s.start_pos + s.n_tokens + kBlock - 1) / kBlock;
    cache_ = std::make_unique<PagedCache>(shape.type, row, kBlock, blocks + 2);
    int64_t next_block = blocks + 1;  // tables run backwards through the pool: out of order
    for (size_t i = 0; i < seqs.size(); ++i) {
      const Seq& s = seqs[i];
      tables_.emplace_back();
      for (int64_t b = 0; b < (s.start_pos + s.n_tokens + kBlock - 1) / kBlock; ++b) {
        tables_.back().push_back(static_cast<int32_t>(next_block--));
      }
      const std::vector<float> k = random_values(static_cast<size_t>((s.start_pos + s.n_tokens) * row),
                                                 40 + static_cast<uint32_t>(i), -1.0f, 1.0f);
      const std::vector<float> v = random_values(static_cast<size_t>((s.start_pos + s.n_tokens) * row),
                                                 50 + static_cast<uint32_t>(i), -1.0f, 1.0f);
      for (int64_t p = 0; p < s.start_pos + s.n_tokens; ++p) {
        cache_->write(PagedCache::row_of(tables_.back(), p, kBlock), k.data() + p * row, v.data() + p * row);
      }
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      slices_.push_back({tokens, seqs[i].n_tokens, seqs[i].start_pos, tables_[i]});
      tokens += seqs[i].n_tokens;
    }
    q_ = random_values(static_cast<size_t>(tokens * shape.heads * kHeadDim), 60, -1.5f, 1.5f);
    tokens_ = tokens;
    config_ = {shape.heads, shape.kv_heads, kHeadDim, 0.125f, shape.window, shape.softcap, 0};
  }

  int64_t n_slots(size_t seq) const { return slices_[seq].start_pos + slices_[seq].n_tokens; }

  // The scored attention (targets: (sequence, first_row)), or with `separate` the plain
  // attention followed by attention_scores per target.
  Result run(const AttentionTileKernels& tiles, unsigned threads,
             const std::vector<std::pair<size_t, int64_t>>& targets, bool separate) {
    ThreadPool pool(threads);
    AttentionScratch scratch;
    Result r;
    r.out.assign(q_.size(), 7.0f);
    const TensorView q{tensor::DType::F32, {kHeadDim, shape_.heads, tokens_, 1}, kHeadDim * sizeof(float), q_.data()};
    TensorView out{tensor::DType::F32, {kHeadDim, shape_.heads, tokens_, 1}, kHeadDim * sizeof(float), r.out.data()};
    const int64_t stride = shape_.kv_heads + 1;  // the extra column must stay as it was
    std::vector<AttentionScoreTarget> list;
    for (const auto& [seq, first_row] : targets) {
      r.scores.emplace_back(static_cast<size_t>(n_slots(seq) * stride), 0.25f);
    }
    for (size_t t = 0; t < targets.size(); ++t) {
      list.push_back({targets[t].first, targets[t].second, r.scores[t].data(), stride});
    }
    if (separate) {
      attention_with(tiles, q, cache_->layer(), slices_, config_, out, pool, scratch);
      for (const AttentionScoreTarget& t : list) {
        attention_scores_with(tiles, q, cache_->layer(), slices_[t.sequence], t.first_row, config_, t.scores,
                              t.slot_stride, pool);
      }
    } else {
      attention_scored_with(tiles, q, cache_->layer(), slices_, config_, list, out, pool, scratch);
    }
    for (const std::vector<float>& table : r.scores) {
      for (size_t i = static_cast<size_t>(shape_.kv_heads); i < table.size(); i += static_cast<size_t>(stride)) {
        EXPECT_EQ(table[i], 0.25f) << "the column past the KV heads was written";
      }
    }
    return r;
  }

 private:
  Shape shape_;
  std::unique_ptr<PagedCache> cache_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<SequenceSlice> slices_;
  std::vector<float> q_;
  int64_t tokens_ = 0;
  AttentionConfig config_;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check(const Shape& shape, const std::vector<Seq>& seqs, const std::vector<std::pair<size_t, int64_t>>& targets) {
  const std::vector<const AttentionTileKernels*> levels = testing::tile_levels();
  for (size_t level = 0; level < levels.size(); ++level) {
    const AttentionTileKernels* tiles = levels[level];
    const std::string name = "instruction-set level " + std::to_string(level);
    Batch batch(shape, seqs);
    const Result reference = batch.run(*tiles, 1, targets, true);
    for (unsigned threads : {1u, 2u, 3u}) {
      const Result fused = batch.run(*tiles, threads, targets, false);
      EXPECT_TRUE(same_bits(fused.out, reference.out)) << name << ", " << threads << " threads: the output differs";
      for (size_t t = 0; t < targets.size(); ++t) {
        EXPECT_TRUE(same_bits(fused.scores[t], reference.scores[t]))
            << name << ", " << threads << " threads: target " << t << "'s scores differ";
      }
      const Result separate = batch.run(*tiles, threads, targets, true);
      EXPECT_TRUE(same_bits(separate.out, reference.out)) << name << ", " << threads << " threads (separate)";
      for (size_t t = 0; t < targets.size(); ++t) {
        EXPECT_TRUE(same_bits(separate.scores[t], reference.scores[t]))
            << name << ", " << threads << " threads (separate): target " << t;
      }
    }
    // Scores were added at all: every scored sequence's tables moved off their start.
    for (size_t t = 0; t < targets.size(); ++t) {
      double added = 0.0;
      for (float s : reference.scores[t]) added += s - 0.25f;
      EXPECT_GT(added, 0.5) << name << ": target " << t;
    }
  }
}

// A prompt chunk of 150 rows deep in a 700-position context (several row chunks and key
// chunks), scored from row 20, beside an unscored prefill and a scored decode row.
TEST(AttentionScored, PromptChunksAndDecodeRowsGiveTheSeparatePassBitForBit) {
  check({6, 2, 0, 0.0f, tensor::DType::F16}, {{150, 550}, {40, 0}, {1, 600}}, {{0, 20}, {2, 0}});
}

// One decode row per sequence, long contexts: few tasks, so the keys are spread over the pool.
TEST(AttentionScored, DecodeRowsSplitOverThePoolGiveTheSameBits) {
  check({6, 2, 0, 0.0f, tensor::DType::F16}, {{1, 900}, {1, 333}}, {{0, 0}, {1, 0}});
}

// Gemma's shape (one KV head, 4 query heads), its sliding window and a soft cap.
TEST(AttentionScored, WindowAndSoftCapGiveTheSameBits) {
  check({4, 1, 64, 30.0f, tensor::DType::F16}, {{90, 300}, {1, 520}}, {{0, 0}, {1, 0}});
}

// An f32 cache holds no probabilities: the separate pass after the attention, the same bits.
TEST(AttentionScored, AnF32CacheRunsTheSeparatePass) {
  check({6, 2, 0, 0.0f, tensor::DType::F32}, {{70, 100}, {1, 300}}, {{0, 5}, {1, 0}});
}

}  // namespace
}  // namespace lumen::backend::cpu
