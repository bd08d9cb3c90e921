// Images in prompts (lumen/prompt_image.h) on the synthetic model. An image's features are
// embedding vectors placed at its positions; fed the token embedding table's own rows for the
// tokens of a text prompt, the image prompt must give that text prompt's logits bit for bit
// (the CPU backend looks the rows up with the same code), however the engine cuts the image:
// chunked prefill, recompute after preemption, swap, forks. The prefix cache keys image blocks
// by the image's content hash as well as the tokens.
#include <cstring>
#include <limits>

#include "backend/tensor_view.h"
#include "lumen/error.h"
#include "synth_engine.h"

namespace lumen::testing {
namespace {

class EngineImages : public SynthEngineTest {
 protected:
  static constexpr int32_t kPlaceholder = 7;  // any id: its embedding is replaced

  // The token embedding table's rows of `ids`, as the forward pass looks them up.
  static std::shared_ptr<const std::vector<float>> table_rows(std::span<const int32_t> ids) {
    const auto embd = static_cast<int64_t>(model_->hparams.embedding_length);
    auto rows = std::make_shared<std::vector<float>>(ids.size() * static_cast<size_t>(embd));
    backend::TensorView out = backend::f32_matrix(rows->data(), embd, static_cast<int64_t>(ids.size()));
    backend_->get_rows(model_->transformer->weights().token_embd, ids, out);
    return rows;
  }

  // `text` with positions [first, first + n) made an image whose features are the table rows of
  // `seen` (text's own tokens there by default): the prompt then holds placeholders there.
  struct ImagePrompt {
    std::vector<int32_t> tokens;
    std::vector<PromptImage> images;
  };
  static ImagePrompt as_image(const std::vector<int32_t>& text, int64_t first, int64_t n, uint64_t hash,
                              std::vector<int32_t> seen = {}) {
    if (seen.empty()) seen.assign(text.begin() + first, text.begin() + first + n);
    ImagePrompt p{text, {}};
    std::fill_n(p.tokens.begin() + first, n, kPlaceholder);
    p.images.push_back({{hash, ~hash}, first, n, table_rows(seen)});
    return p;
  }

  static SamplingParams scored(int64_t max_tokens) {
    SamplingParams p = greedy(max_tokens);
    p.logprobs = 5;
    p.prompt_logprobs = 5;
    return p;
  }

  // Everything that depends on the logits, bit for bit: each prompt position's top
  // alternatives (the entry's own token is a placeholder at image positions), the tokens and
  // their log-probabilities.
  static void expect_same_logits(const GenerationResult& text, const GenerationResult& image) {
    ASSERT_EQ(text.prompt_logprobs.size(), image.prompt_logprobs.size());
    for (size_t i = 0; i < text.prompt_logprobs.size(); ++i) {
      const auto& a = text.prompt_logprobs[i].top;
      const auto& b = image.prompt_logprobs[i].top;
      ASSERT_EQ(a.size(), b.size()) << "position " << i;
      for (size_t k = 0; k < a.size(); ++k) {
        EXPECT_EQ(a[k].token, b[k].token) << "position " << i;
        EXPECT_EQ(std::memcmp(&a[k].logprob, &b[k].logprob, sizeof(float)), 0) << "position " << i;
      }
    }
    EXPECT_EQ(text.tokens, image.tokens);
    ASSERT_EQ(text.logprobs.size(), image.logprobs.size());
    EXPECT_EQ(std::memcmp(text.logprobs.data(), image.logprobs.data(), text.logprobs.size() * sizeof(float)), 0);
  }

  // Runs `others` (text prompts) then `last` through a fresh engine, returns last's results.
  static std::vector<GenerationResult> run(const EngineConfig& c, const std::vector<std::vector<int32_t>>& others,
                                           const ImagePrompt& last, const SamplingParams& params,
                                           EngineStats* stats = nullptr) {
    Engine engine(handle(), c);
    for (const auto& p : others) engine.add_request(p, greedy(20));
    std::vector<RequestHandle> hs = engine.add_request_n(last.tokens, params, 0, 0, 0, last.images);
    drain(engine);
    std::vector<GenerationResult> out;
    for (RequestHandle& h : hs) out.push_back(h.collect());
    if (stats) *stats = engine.stats();
    EXPECT_EQ(engine.stats().kv_blocks_used, 0);
    return out;
  }
};

// Prefill in chunks of 7 tokens: the image [5, 23) starts, continues and ends in different steps.
TEST_F(EngineImages, ChunkedPrefillThroughAnImageGivesTheTextLogits) {
  const std::vector<int32_t> text = prompt(30, 3);
  EngineConfig c = config(256);
  c.max_num_batched_tokens = 7;
  const auto plain = run(c, {}, {text, {}}, scored(6));
  const auto image = run(c, {}, as_image(text, 5, 18, 1), scored(6));
  expect_same_logits(plain.front(), image.front());
  // The placeholder is not what the model saw: with its own embedding the logits differ.
  ImagePrompt placeholders = as_image(text, 5, 18, 1);
  placeholders.images.clear();
  const auto wrong = run(c, {}, placeholders, scored(6));
  EXPECT_NE(wrong.front().prompt_logprobs[10].top.front().logprob,
            plain.front().prompt_logprobs[10].top.front().logprob);
}

// The image request runs; then one of higher priority arrives that needs most of the pool, and
// the image request (the only one it can preempt) is recomputed in 8-token chunks, or swapped
// out and back. Its logits stay the text prompt's, bit for bit, in the same schedule.
TEST_F(EngineImages, PreemptionRecomputesOrSwapsTheImage) {
  const std::vector<int32_t> text = prompt(24, 4);
  for (PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    SCOPED_TRACE(mode == PreemptionMode::Swap ? "swap" : "recompute");
    EngineConfig c = config(18);
    c.policy = SchedulingPolicy::Priority;
    c.preemption_mode = mode;
    c.max_num_batched_tokens = 8;
    c.enable_prefix_caching = false;  // recompute from the tokens and features, not the cache
    auto run_preempted = [&](const ImagePrompt& p, EngineStats& stats) {
      Engine engine(handle(), c);
      RequestHandle h = engine.add_request_n(p.tokens, scored(20), 0, 0, 0, p.images).front();
      for (int i = 0; i < 5; ++i) engine.step();  // its prompt is in: 3 chunks, then decoding
      RequestHandle urgent = engine.add_request(prompt(40, 9), greedy(10), 1);
      drain(engine);
      EXPECT_EQ(urgent.collect().tokens.size(), 10u);
      stats = engine.stats();
      return h.collect();
    };
    EngineStats plain_stats, image_stats;
    const GenerationResult plain = run_preempted({text, {}}, plain_stats);
    const GenerationResult image = run_preempted(as_image(text, 2, 16, 2), image_stats);
    EXPECT_GE(image_stats.preemptions, 1u);
    EXPECT_EQ(image_stats.preemptions, plain_stats.preemptions);
    if (mode == PreemptionMode::Swap) {
      EXPECT_GT(image_stats.swapped_out_blocks, 0u);
    }
    expect_same_logits(plain, image);
  }
}

// n = 3 completions fork the prompt's sequence: each fork reads the same features.
TEST_F(EngineImages, ForksShareTheImage) {
  const std::vector<int32_t> text = prompt(20, 5);
  SamplingParams p = scored(8);
  p.n = 3;
  p.temperature = 0.8f;
  p.seed = 11;
  EngineConfig c = config(64);
  c.max_num_batched_tokens = 9;
  const auto plain = run(c, {}, {text, {}}, p);
  const auto image = run(c, {}, as_image(text, 3, 12, 3), p);
  ASSERT_EQ(plain.size(), 3u);
  for (size_t i = 0; i < plain.size(); ++i) expect_same_logits(plain[i], image[i]);
}

// The same tokens and image reuse every cached block; the same tokens with another image reuse
// only the blocks before the image, and compute what a fresh engine computes. (No prompt
// logprobs here: a request asking for them computes its whole prompt.)
TEST_F(EngineImages, PrefixCacheIsKeyedOnTheImage) {
  const std::vector<int32_t> text = prompt(32, 6);
  const std::vector<int32_t> other_rows = prompt(16, 7);
  const ImagePrompt first = as_image(text, 9, 16, 100);
  const ImagePrompt same = as_image(text, 9, 16, 100);
  const ImagePrompt different = as_image(text, 9, 16, 200, other_rows);
  ASSERT_EQ(first.tokens, different.tokens);
  SamplingParams p = greedy(4);
  p.logprobs = 3;

  Engine engine(handle(), config(256));
  std::vector<GenerationResult> results;
  auto hits_of = [&](const ImagePrompt& request) {
    const uint64_t before = engine.stats().prefix_hit_blocks;
    RequestHandle h = engine.add_request_n(request.tokens, p, 0, 0, 0, request.images).front();
    drain(engine);
    results.push_back(h.collect());
    return engine.stats().prefix_hit_blocks - before;
  };
  EXPECT_EQ(hits_of(first), 0u);
  EXPECT_EQ(hits_of(same), 7u);       // the 31 positions before the last: 7 full blocks
  EXPECT_EQ(hits_of(different), 2u);  // blocks [0, 8): the image starts in block 2
  // Cached or computed, the same K/V: the same tokens, log-probabilities within rounding.
  auto expect_close = [](const GenerationResult& a, const GenerationResult& b) {
    EXPECT_EQ(a.tokens, b.tokens);
    ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
    for (size_t i = 0; i < a.logprobs.size(); ++i) EXPECT_NEAR(a.logprobs[i], b.logprobs[i], 1e-4);
  };
  expect_close(results[0], results[1]);
  const auto fresh = run(config(256), {}, different, p);
  expect_close(fresh.front(), results[2]);
  // And the two images do lead to different K/V: their first tokens' log-probabilities differ.
  EXPECT_NE(results[0].logprobs.front(), results[2].logprobs.front());
}

TEST_F(EngineImages, BadImagesAreRefusedAndQueueNothing) {
  Engine engine(handle(), config(64));
  const std::vector<int32_t> text = prompt(12, 8);
  auto refused = [&](std::vector<PromptImage> images, const SamplingParams& params = greedy(2)) {
    EXPECT_THROW(engine.add_request_n(text, params, 0, 0, 0, std::move(images)), Error);
    EXPECT_FALSE(engine.has_unfinished());
  };
  const auto rows4 = table_rows(std::span(text).first(4));
  refused({{{1, 1}, 10, 4, rows4}});                        // past the prompt's end
  refused({{{1, 1}, -1, 4, rows4}});                        // before its start
  refused({{{1, 1}, 0, 3, rows4}});                         // 4 rows of features for 3 tokens
  refused({{{1, 1}, 0, 4, nullptr}});                       // no features
  refused({{{1, 1}, 0, 4, rows4}, {{2, 2}, 2, 4, rows4}});  // overlapping
  auto nan = std::make_shared<std::vector<float>>(*rows4);
  (*nan)[5] = std::numeric_limits<float>::quiet_NaN();
  refused({{{1, 1}, 0, 4, nan}});
  SamplingParams evicting = greedy(2);
  evicting.kv_eviction = parse_kv_importance("h2o:budget=8");
  refused({{{1, 1}, 0, 4, rows4}}, evicting);
  EXPECT_NO_THROW(engine.add_request_n(text, greedy(2), 0, 0, 0, {{{1, 1}, 8, 4, rows4}}));
  drain(engine);
}

}  // namespace
}  // namespace lumen::testing
