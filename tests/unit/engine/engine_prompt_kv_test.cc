// Disaggregated prefill and decode at the engine level (lumen/prompt_kv.h): a prompt computed by
// one engine, its K/V taken out and imported into another, which then continues the request
// exactly as an engine that computed the prompt itself does, without computing it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "lumen/prompt_kv_exchange.h"
#include "synth_engine.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

class EnginePromptKvTest : public SynthEngineTest {
 protected:
  static constexpr int32_t kBlock = 4;

  static EngineConfig sender_config(int64_t store_bytes = int64_t{64} << 20) {
    EngineConfig c = config(256, kBlock);
    c.prompt_kv_store_bytes = store_bytes;
    return c;
  }

  // Resolves a future that the engine answers at its next step.
  static int64_t at_next_step(Engine& engine, std::future<int64_t> result) {
    engine.step();
    return result.get();
  }

  // The prompt computed by a sender engine; returns its request id.
  static uint64_t prefill(Engine& sender, const std::vector<int32_t>& prompt, uint64_t salt = 0) {
    RequestHandle h = sender.add_request(prompt, greedy(1), 0, salt);
    drain(sender);
    h.collect();
    return h.id();
  }

  // What an engine that computes everything itself generates, and the tokens it computed.
  static std::pair<std::vector<int32_t>, uint64_t> reference(const std::vector<int32_t>& prompt,
                                                             const SamplingParams& params) {
    Engine engine(handle(), config(256, kBlock));
    RequestHandle h = engine.add_request(prompt, params);
    drain(engine);
    return {tokens(h), engine.stats().computed_tokens};
  }
};

TEST_F(EnginePromptKvTest, AMovedPromptContinuesAsIfComputedThereWithoutComputingIt) {
  const std::vector<int32_t> p = prompt(45, 1);
  Engine sender(handle(), sender_config());
  const uint64_t id = prefill(sender, p);
  EXPECT_EQ(PromptKvExchange(sender).stats().stored, 1u);

  Engine receiver(handle(), config(256, kBlock));
  ASSERT_EQ(PromptKvExchange(receiver).kv_format(), PromptKvExchange(sender).kv_format());
  EXPECT_EQ(PromptKvExchange(receiver).kv_page_bytes(), PromptKvExchange(sender).kv_page_bytes());
  const int64_t known = at_next_step(receiver, PromptKvExchange(receiver).cached_prompt_tokens(p, 0));
  EXPECT_EQ(known, 0);
  std::optional<PromptKv> kv = PromptKvExchange(sender).take_prompt_kv(id, p, 0, known);
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->tokens.size(), 44u);  // whole blocks, never the last token
  EXPECT_EQ(kv->pages.size(), 11u);
  EXPECT_EQ(kv->n_known, 0);
  EXPECT_EQ(at_next_step(receiver, PromptKvExchange(receiver).import_prompt_kv(p, std::move(*kv))), 44);
  EXPECT_EQ(PromptKvExchange(receiver).stats().imported_tokens, 44u);

  const SamplingParams params = greedy(16);
  RequestHandle h = receiver.add_request(p, params);
  drain(receiver);
  const auto [expected, computed] = reference(p, params);
  EXPECT_EQ(tokens(h), expected);
  EXPECT_EQ(receiver.stats().computed_tokens, computed - 44);
  EXPECT_EQ(PromptKvExchange(sender).stats().taken, 1u);
}

TEST_F(EnginePromptKvTest, OnlyWhatTheReceiverLacksMovesAndSampledOutputStaysTheSame) {
  const std::vector<int32_t> p = prompt(61, 2);
  Engine sender(handle(), sender_config());
  const uint64_t id = prefill(sender, p, 7);

  Engine receiver(handle(), config(256, kBlock));
  // The receiver already cached the prompt's first 20 tokens (another turn of the conversation).
  receiver.add_request(std::vector<int32_t>(p.begin(), p.begin() + 21), greedy(1), 0, 7);
  drain(receiver);
  const int64_t known = at_next_step(receiver, PromptKvExchange(receiver).cached_prompt_tokens(p, 7));
  EXPECT_EQ(known, 20);
  std::optional<PromptKv> kv = PromptKvExchange(sender).take_prompt_kv(id, p, 7, known);
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->n_known, 20);
  EXPECT_EQ(kv->pages.size(), 15u - 5u);
  EXPECT_EQ(at_next_step(receiver, PromptKvExchange(receiver).import_prompt_kv(p, std::move(*kv))), 40);

  SamplingParams params;
  params.temperature = 0.9f;
  params.top_p = 0.95f;
  params.seed = 1234;
  params.max_tokens = 12;
  params.ignore_eos = true;
  RequestHandle h = receiver.add_request(p, params, 0, 7);
  drain(receiver);
  EXPECT_EQ(tokens(h), reference(p, params).first);
}

TEST_F(EnginePromptKvTest, KeptKvIsTakenOnceAndOnlyByWhoKnowsThePromptAndSalt) {
  const std::vector<int32_t> p = prompt(30, 3);
  Engine sender(handle(), sender_config());
  const uint64_t id = prefill(sender, p, 5);
  std::vector<int32_t> other = p;
  other[3] += 1;
  EXPECT_FALSE(PromptKvExchange(sender).take_prompt_kv(id, other, 5, 0));
  EXPECT_FALSE(PromptKvExchange(sender).take_prompt_kv(id, p, 6, 0));
  EXPECT_FALSE(PromptKvExchange(sender).take_prompt_kv(id + 1, p, 5, 0));
  EXPECT_FALSE(PromptKvExchange(sender).take_prompt_kv(id, std::vector<int32_t>(p.begin(), p.begin() + 10), 5, 0));
  // A longer prompt that begins with it is fine: the K/V covers its start.
  std::vector<int32_t> longer = p;
  longer.push_back(42);
  EXPECT_TRUE(PromptKvExchange(sender).take_prompt_kv(id, longer, 5, 0));
  EXPECT_FALSE(PromptKvExchange(sender).take_prompt_kv(id, p, 5, 0));
}

TEST_F(EnginePromptKvTest, TheStoreDropsTheOldestForRoom) {
  const std::vector<int32_t> a = prompt(41, 4), b = prompt(41, 5);
  Engine probe(handle(), sender_config());
  const size_t one = 10 * PromptKvExchange(probe).kv_page_bytes() + 4096;  // ten pages and the bookkeeping
  Engine sender(handle(), sender_config(static_cast<int64_t>(one)));
  const uint64_t first = prefill(sender, a);
  const uint64_t second = prefill(sender, b);
  EXPECT_FALSE(PromptKvExchange(sender).take_prompt_kv(first, a, 0, 0));
  EXPECT_TRUE(PromptKvExchange(sender).take_prompt_kv(second, b, 0, 0));
  EXPECT_EQ(PromptKvExchange(sender).stats().evicted, 1u);
}

TEST_F(EnginePromptKvTest, AReceiverWhoseCacheChangedComputesTheRestItself) {
  const std::vector<int32_t> p = prompt(37, 6);
  Engine sender(handle(), sender_config());
  std::optional<PromptKv> kv = PromptKvExchange(sender).take_prompt_kv(prefill(sender, p), p, 0, 0);
  ASSERT_TRUE(kv.has_value());
  Engine receiver(handle(), config(256, kBlock));
  // Between asking and importing, the receiver cached part of the prompt itself.
  receiver.add_request(std::vector<int32_t>(p.begin(), p.begin() + 13), greedy(1));
  drain(receiver);
  EXPECT_EQ(at_next_step(receiver, PromptKvExchange(receiver).import_prompt_kv(p, std::move(*kv))), 0);
  RequestHandle h = receiver.add_request(p, greedy(8));
  drain(receiver);
  EXPECT_EQ(tokens(h), reference(p, greedy(8)).first);
}

TEST_F(EnginePromptKvTest, KvThatDoesNotFitIsRefusedAndChangesNothing) {
  const std::vector<int32_t> p = prompt(33, 7);
  Engine sender(handle(), sender_config());
  const uint64_t id = prefill(sender, p);
  const PromptKv good = *PromptKvExchange(sender).take_prompt_kv(id, p, 0, 0);

  EngineConfig q8 = config(256, kBlock);
  q8.kv_cache_dtype = KvCacheDtype::Q8_0;
  Engine other_format(handle(), q8);
  EXPECT_THROW(PromptKvExchange(other_format).import_prompt_kv(p, good), Error);

  Engine receiver(handle(), config(256, kBlock));
  // Refused at once (the pages) or at the engine's next step (the prompt against the cache).
  auto refused = [&](PromptKv kv, std::vector<int32_t> for_prompt) {
    try {
      std::future<int64_t> result = PromptKvExchange(receiver).import_prompt_kv(std::move(for_prompt), std::move(kv));
      receiver.step();
      EXPECT_THROW(result.get(), Error);
    } catch (const Error&) {
    }
  };
  PromptKv wrong_tokens = good;
  wrong_tokens.tokens[5] += 1;
  refused(wrong_tokens, p);
  PromptKv missing_page = good;
  missing_page.pages.pop_back();
  refused(missing_page, p);
  PromptKv short_page = good;
  short_page.pages[2].resize(short_page.pages[2].size() - 1);
  refused(short_page, p);
  PromptKv odd_start = good;
  odd_start.n_known = 3;
  refused(odd_start, p);
  // All of the prompt would leave nothing to compute for the first sample.
  refused(good, std::vector<int32_t>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(good.tokens.size())));
  EXPECT_EQ(PromptKvExchange(receiver).stats().imported_tokens, 0u);
  EXPECT_EQ(at_next_step(receiver, PromptKvExchange(receiver).cached_prompt_tokens(p, 0)), 0);
}

TEST_F(EnginePromptKvTest, NonFiniteOrNeverComputedPagesAreRefusedBeforeAnythingIsWritten) {
  // Issue 47: a decode instance imported NaN and all-zero pages silently, and the next request
  // with the same prompt adopted them. Each cache type's NaN: all-ones bits are NaN in f32, f16,
  // bf16 and fp8 e4m3, and a q8_0 / q4_0 block whose f16 scale is NaN.
  for (const KvCacheDtype dtype : {KvCacheDtype::F16, KvCacheDtype::Q8_0, KvCacheDtype::Bf16}) {
    EngineConfig c = sender_config();
    c.kv_cache_dtype = dtype;
    const std::vector<int32_t> p = prompt(33, 9);
    Engine sender(handle(), c);
    const uint64_t id = prefill(sender, p);
    const PromptKv good = *PromptKvExchange(sender).take_prompt_kv(id, p, 0, 0);
    c.prompt_kv_store_bytes = 0;
    Engine receiver(handle(), c);

    PromptKv nan_page = good;
    std::fill_n(nan_page.pages[1].begin(), 64, uint8_t{0xff});  // a q8_0 block begins with its scale
    PromptKv zero_page = good;
    std::fill(zero_page.pages[2].begin(), zero_page.pages[2].end(), uint8_t{0});
    for (const auto& [bad, message] :
         {std::pair{nan_page, "page 1 holds NaN or infinite values"}, std::pair{zero_page, "page 2 is all zeros"}}) {
      try {
        PromptKvExchange(receiver).import_prompt_kv(p, bad);
        ADD_FAILURE() << "imported";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(at_next_step(receiver, PromptKvExchange(receiver).cached_prompt_tokens(p, 0)), 0);  // nothing written
    EXPECT_EQ(at_next_step(receiver, PromptKvExchange(receiver).import_prompt_kv(p, good)),
              32);  // the good pages still fit
    RequestHandle h = receiver.add_request(p, greedy(8));
    drain(receiver);
    Engine alone(handle(), c);
    RequestHandle expected = alone.add_request(p, greedy(8));
    drain(alone);
    EXPECT_EQ(tokens(h), tokens(expected)) << kv_cache_dtype_name(dtype);
  }
}

TEST_F(EnginePromptKvTest, KeepingNeedsPrefixCachingAndAnEngineWithoutAStoreHasNothingToTake) {
  EngineConfig no_cache = sender_config();
  no_cache.enable_prefix_caching = false;
  EXPECT_THROW(Engine(handle(), no_cache), Error);
  Engine plain(handle(), config(64, kBlock));
  EXPECT_THROW(PromptKvExchange(plain).take_prompt_kv(1, prompt(9, 1), 0, 0), Error);
}

}  // namespace
}  // namespace lumen::testing
