// Importance-based eviction's pure parts (engine/kv_importance.h, lumen/kv_eviction.h): the spec
// syntax and its errors, when an eviction is due, which slots SnapKV and H2O keep, and what an
// eviction and its undoing do to a sequence's tokens and counters.
#include "engine/kv_importance.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/sequence.h"
#include "lumen/kv_eviction.h"
#include "util/error.h"

namespace lumen::engine {
namespace {

TEST(KvImportanceSpec, ParsesBothMethodsWithTheirDefaults) {
  const KvImportance s = parse_kv_importance("snapkv:budget=512");
  EXPECT_EQ(s.method, KvImportanceMethod::SnapKv);
  EXPECT_EQ(s.budget, 512);
  EXPECT_EQ(s.window, 32);
  EXPECT_EQ(s.kernel, 7);
  const KvImportance t = parse_kv_importance("snapkv:budget=256,window=16,kernel=5");
  EXPECT_EQ(t.window, 16);
  EXPECT_EQ(t.kernel, 5);
  const KvImportance h = parse_kv_importance("h2o:budget=300");
  EXPECT_EQ(h.method, KvImportanceMethod::H2O);
  EXPECT_EQ(h.recent, 150);
  EXPECT_EQ(parse_kv_importance("h2o:recent=10,budget=64").recent, 10);
  EXPECT_FALSE(parse_kv_importance("none").enabled());
  EXPECT_EQ(format_kv_importance(t), "snapkv:budget=256,window=16,kernel=5");
  EXPECT_EQ(parse_kv_importance(format_kv_importance(h)).recent, 150);
}

TEST(KvImportanceSpec, BadSpecsAreClearErrors) {
  auto message = [](const char* spec) {
    try {
      parse_kv_importance(spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("lru:budget=5").find("snapkv, h2o or none"), std::string::npos);
  EXPECT_NE(message("snapkv").find("budget=B is required"), std::string::npos);
  EXPECT_NE(message("snapkv:window=4").find("budget=B"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=0").find("budget=B"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=-4").find("budget must be a count"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=12x").find("budget must be a count"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=99999999999").find("budget must be a count"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=64,recent=3").find("unknown key 'recent'"), std::string::npos);
  EXPECT_NE(message("h2o:budget=64,kernel=3").find("unknown key 'kernel'"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=64,window=64").find("window (64)"), std::string::npos);
  EXPECT_NE(message("snapkv:budget=64,kernel=4").find("must be odd"), std::string::npos);
  EXPECT_NE(message("h2o:budget=64,recent=64").find("recent (64)"), std::string::npos);
  EXPECT_NE(message("h2o:budget=64,").find("trailing comma"), std::string::npos);
  EXPECT_NE(message("h2o:budget").find("not key=value"), std::string::npos);
  EXPECT_NE(message("sink:4,window:64").find("server-wide"), std::string::npos);
}

TEST(KvImportance, SnapKvEvictsOnceAfterThePromptAndH2oABlockAtATime) {
  KvImportanceState snap;
  snap.config = parse_kv_importance("snapkv:budget=40,window=8");
  EXPECT_EQ(first_scored_row(snap, 0, 64, 100), 64);   // rows 0..91 are not in the window
  EXPECT_EQ(first_scored_row(snap, 64, 36, 100), 28);  // rows from position 92 on
  EXPECT_EQ(eviction_due(snap, 100, 16), 40);
  EXPECT_TRUE(snap.compressed);
  EXPECT_EQ(first_scored_row(snap, 40, 1, 41), 1);  // nothing more to score
  EXPECT_FALSE(eviction_due(snap, 41, 16));
  KvImportanceState small;
  small.config = snap.config;
  EXPECT_FALSE(eviction_due(small, 30, 16));  // within the budget: nothing, ever
  EXPECT_TRUE(small.compressed);

  KvImportanceState h2o;
  h2o.config = parse_kv_importance("h2o:budget=40,recent=8");  // 48 positions: three blocks
  EXPECT_EQ(first_scored_row(h2o, 5, 3, 100), 0);
  EXPECT_FALSE(eviction_due(h2o, 47, 16));
  EXPECT_EQ(eviction_due(h2o, 48, 16), 32);
  EXPECT_EQ(eviction_due(h2o, 200, 16), 32);  // a long prompt: down to the same, at once
}

TEST(KvImportance, SnapKvKeepsEachHeadsPooledTopAndTheWindow) {
  // 12 slots, 2 (layer, head) pairs; the window is the last 3 slots.
  const int64_t n = 12, lh = 2;
  std::vector<float> scores(static_cast<size_t>(n * lh), 0.0f);
  auto at = [&](int64_t slot, int64_t pair) -> float& { return scores[static_cast<size_t>(slot * lh + pair)]; };
  at(2, 0) = 5.0f;  // head 0: one peak at 2, a smaller one at 7
  at(7, 0) = 3.0f;
  at(4, 1) = 1.0f;  // head 1: peaks at 4 and 0
  at(0, 1) = 2.0f;
  // Kernel 1 (no pooling): the two peaks.
  EXPECT_EQ(select_snapkv(scores, n, lh, 3, 1, 5), (std::vector<int32_t>{2, 7, 9, 10, 11, 0, 4, 9, 10, 11}));
  // Kernel 3: a peak lifts its neighbours, and the highest peak's take the places first
  // (ties: the earlier slot).
  EXPECT_EQ(select_snapkv(scores, n, lh, 3, 3, 5), (std::vector<int32_t>{1, 2, 9, 10, 11, 0, 1, 9, 10, 11}));
  EXPECT_THROW(select_snapkv(scores, n, lh, 3, 3, 13), Error);
}

TEST(KvImportance, H2oKeepsTheRecentAndTheHeaviestOthers) {
  const int64_t n = 10, lh = 1;
  const std::vector<float> scores = {9.0f, 0.1f, 0.2f, 4.0f, 0.3f, 8.0f, 0.0f, 7.0f, 0.0f, 0.0f};
  EXPECT_EQ(select_h2o(scores, n, lh, 2, 5), (std::vector<int32_t>{0, 5, 7, 8, 9}));
  // The recent slots are kept whatever they scored, and are not counted twice.
  EXPECT_EQ(select_h2o(scores, n, lh, 4, 5), (std::vector<int32_t>{0, 6, 7, 8, 9}));
}

TEST(KvImportance, LocalLayersKeepTheirMostRecentSlots) {
  // Two layers of two KV heads, the second local: its heads' scored choices become the last 3
  // of 8 slots (consecutive positions, so a window counted in slots counts positions); the
  // full-attention layer's stay.
  std::vector<int32_t> keep = {0, 2, 7, 1, 3, 7, 0, 4, 7, 5, 6, 7};
  const std::vector<int64_t> windows = {0, 4};
  keep_recent_in_local_layers(keep, windows, 2, 8, 3);
  EXPECT_EQ(keep, (std::vector<int32_t>{0, 2, 7, 1, 3, 7, 5, 6, 7, 5, 6, 7}));
  std::vector<int32_t> short_keep(5);
  EXPECT_THROW(keep_recent_in_local_layers(short_keep, windows, 2, 8, 3), Error);
}

TEST(KvImportance, AnEvictionKeepsTheTokensAsideAndARecomputeGetsThemBack) {
  kv::BlockPool pool(32, 4);
  const kv::KvLayout layout = kv::make_kv_layout(std::vector<int64_t>{0}, true);
  const kv::KvSpace space{&pool, &layout, -1};
  std::vector<int32_t> prompt(20);
  std::iota(prompt.begin(), prompt.end(), 0);
  Sequence seq(1, prompt, 0, 0, space, 0);
  seq.importance.config = parse_kv_importance("h2o:budget=16,recent=4");
  for (int32_t t = 0; t < 5; ++t) seq.tokens.push_back(1000 + t);  // 25 tokens, 24 computed
  seq.n_computed = 24;
  const int64_t lh = 1;
  seq.importance.scores.resize(24);
  std::iota(seq.importance.scores.begin(), seq.importance.scores.end(), 0.0f);
  const std::vector<int32_t> keep = select_h2o(seq.importance.scores, 24, lh, 4, 12);
  record_eviction(seq, keep, 12, lh);
  EXPECT_EQ(seq.n_computed, 12);
  EXPECT_EQ(seq.tokens.size(), 13u);
  EXPECT_EQ(seq.prompt_len, 8);
  EXPECT_EQ(seq.n_generated(), 5);
  EXPECT_EQ(seq.importance.n_evicted, 12);
  EXPECT_EQ(seq.position_of(12), 24);  // the next token goes on at its full length
  // The scores follow their slots: slot j now holds what slot keep[j] scored.
  for (int64_t j = 0; j < 12; ++j)
    EXPECT_EQ(seq.importance.scores[static_cast<size_t>(j)], static_cast<float>(keep[static_cast<size_t>(j)]));
  restore_evicted(seq);
  EXPECT_EQ(seq.tokens.size(), 25u);
  EXPECT_EQ(seq.prompt_len, 20);
  EXPECT_EQ(seq.n_generated(), 5);
  EXPECT_EQ(seq.importance.n_evicted, 0);
  EXPECT_EQ(std::vector<int32_t>(seq.tokens.begin(), seq.tokens.begin() + 20), prompt);
}

}  // namespace
}  // namespace lumen::engine
