// Engine::encode_image and its visual-feature cache, with an image encoder made for the test
// from real data: a "file" is a list of token ids, its features the token embedding table's
// rows for them, so a prompt carrying the encoded image must give the text prompt's logits.
#include <cstring>

#include "backend/tensor_view.h"
#include "lumen/error.h"
#include "synth_engine.h"

namespace lumen::testing {
namespace {

class TokenRowsEncoder final : public ImageEncoder {
 public:
  TokenRowsEncoder(const engine::LoadedModel& model, backend::Backend& backend, int64_t width)
      : model_(model), backend_(backend), width_(width) {}
  int64_t embedding_length() const override { return width_; }
  std::vector<float> encode(std::span<const uint8_t> file) const override {
    if (file.empty() || file.size() % 4 != 0) throw Error("not a list of token ids");
    std::vector<int32_t> ids(file.size() / 4);
    std::memcpy(ids.data(), file.data(), file.size());
    std::vector<float> rows(ids.size() * static_cast<size_t>(width_));
    backend::TensorView out = backend::f32_matrix(rows.data(), width_, static_cast<int64_t>(ids.size()));
    backend_.get_rows(model_.transformer->weights().token_embd, ids, out);
    ++calls;
    return rows;
  }
  PromptFormat prompt_format() const override { return {"</s>", "", ""}; }
  mutable int calls = 0;

 private:
  const engine::LoadedModel& model_;
  backend::Backend& backend_;
  int64_t width_;
};

class EngineImageEncoder : public SynthEngineTest {
 protected:
  static std::vector<uint8_t> file_of(std::span<const int32_t> ids) {
    std::vector<uint8_t> bytes(ids.size() * 4);
    std::memcpy(bytes.data(), ids.data(), bytes.size());
    return bytes;
  }
  static int64_t width() { return static_cast<int64_t>(model_->hparams.embedding_length); }
  static std::shared_ptr<TokenRowsEncoder> encoder() {
    return std::make_shared<TokenRowsEncoder>(*model_, *backend_, width());
  }
};

TEST_F(EngineImageEncoder, ATextModelRefusesImages) {
  Engine engine(handle(), config(64));
  const std::vector<uint8_t> file = file_of(prompt(4, 1));
  EXPECT_THROW(engine.encode_image(file), Error);
  Model model = handle();
  EXPECT_THROW(model.set_image_encoder(std::make_shared<TokenRowsEncoder>(*model_, *backend_, width() + 1)), Error);
  EXPECT_FALSE(model.image_encoder());
}

// The second request with the same file is served from the cache (the encoder runs once); a
// different file is encoded; the cache's budget bounds what it keeps.
TEST_F(EngineImageEncoder, FeatureCacheHitsOnTheSameBytes) {
  Model model = handle();
  auto rows = encoder();
  model.set_image_encoder(rows);
  EngineConfig c = config(64);
  const int64_t image_bytes = 6 * width() * static_cast<int64_t>(sizeof(float));
  c.image_feature_cache_bytes = image_bytes;  // one 6-token image
  Engine engine(model, c);
  const std::vector<uint8_t> a = file_of(prompt(6, 2)), b = file_of(prompt(6, 3));
  const PromptImage first = engine.encode_image(a);
  EXPECT_EQ(first.n_tokens, 6);
  const PromptImage again = engine.encode_image(a);
  EXPECT_EQ(again.embeddings, first.embeddings);  // the cached vectors themselves
  EXPECT_EQ(again.content_hash, first.content_hash);
  EXPECT_EQ(rows->calls, 1);
  EXPECT_EQ(engine.stats().image_feature_cache_hits, 1u);
  EXPECT_EQ(engine.stats().image_feature_cache_misses, 1u);
  EXPECT_EQ(engine.stats().image_feature_cache_bytes, static_cast<size_t>(image_bytes));
  const PromptImage other = engine.encode_image(b);  // evicts a: the budget holds one
  EXPECT_NE(other.content_hash, first.content_hash);
  engine.encode_image(a);
  EXPECT_EQ(rows->calls, 3);
  EXPECT_EQ(engine.stats().image_feature_cache_misses, 3u);
  EXPECT_EQ(engine.stats().image_feature_cache_bytes, static_cast<size_t>(image_bytes));
  EXPECT_THROW(engine.encode_image(std::vector<uint8_t>{1, 2, 3}), Error);  // the encoder's refusal

  c.image_feature_cache_bytes = 0;  // off
  Engine uncached(model, c);
  uncached.encode_image(a);
  uncached.encode_image(a);
  EXPECT_EQ(uncached.stats().image_feature_cache_hits, 0u);
  EXPECT_EQ(uncached.stats().image_feature_cache_bytes, 0u);
}

// Through the encoder: the image's rows are the text's own, so the logits are the text's.
TEST_F(EngineImageEncoder, AnEncodedImageGivesTheTextLogits) {
  Model model = handle();
  model.set_image_encoder(encoder());
  EngineConfig c = config(64);
  c.enable_prefix_caching = false;  // both prompts computed whole, in the same shape of step
  Engine engine(model, c);
  const std::vector<int32_t> text = prompt(16, 4);
  PromptImage image = engine.encode_image(file_of(std::span(text).subspan(4, 8)));
  image.first_token = 4;
  std::vector<int32_t> with_image = text;
  std::fill_n(with_image.begin() + 4, 8, 9);
  SamplingParams p = greedy(6);
  p.logprobs = 3;
  RequestHandle a = engine.add_request(text, p);
  drain(engine);
  RequestHandle b = engine.add_request_n(with_image, p, 0, 0, 0, {image}).front();
  drain(engine);
  const GenerationResult ra = a.collect(), rb = b.collect();
  EXPECT_EQ(ra.tokens, rb.tokens);
  ASSERT_EQ(ra.logprobs.size(), rb.logprobs.size());
  EXPECT_EQ(std::memcmp(ra.logprobs.data(), rb.logprobs.data(), ra.logprobs.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace lumen::testing
