// The prefill side's answer to one fetch, without sockets: what the source says becomes Found or
// NotFound, and everything that goes wrong becomes an Error answer with a message, never an
// exception.
#include "kv_transfer/fetch_answer.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

constexpr uint64_t kFormat = 0x5eed;

KvFetch sample_fetch() {
  KvFetch fetch;
  fetch.request_id = 41;
  fetch.cache_salt = 99;
  fetch.format = kFormat;
  fetch.n_known = 2;
  fetch.tokens = {3, 1, 4, 1, 5, 9, 2, 6};
  return fetch;
}

PromptKv sample_kv() {
  PromptKv kv;
  kv.format = kFormat;
  kv.cache_salt = 99;
  kv.tokens = {3, 1, 4, 1};
  kv.n_known = 2;
  kv.pages = {std::vector<uint8_t>(32, 7), std::vector<uint8_t>(32, 8)};
  return kv;
}

FetchAnswer answer(const std::vector<Frame>& request, const KvSource& source) {
  const std::vector<Frame> frames = answer_fetch(frame_views(request), source);
  return decode_answer(frame_views(frames), AnswerBounds{32, 16});
}

FetchAnswer answer(const KvSource& source) { return answer(encode_fetch(sample_fetch()), source); }

TEST(FetchAnswer, FoundCarriesTheSourcesKv) {
  const FetchAnswer got = answer([](const KvFetch&) { return sample_kv(); });
  ASSERT_EQ(got.status, AnswerStatus::Found);
  EXPECT_EQ(got.kv.tokens, sample_kv().tokens);
  EXPECT_EQ(got.kv.pages, sample_kv().pages);
  EXPECT_EQ(got.kv.n_known, 2);
  EXPECT_EQ(got.kv.cache_salt, 99u);
}

TEST(FetchAnswer, TheSourceSeesTheFetchAsSent) {
  KvFetch seen;
  answer([&](const KvFetch& fetch) -> std::optional<PromptKv> {
    seen = fetch;
    return std::nullopt;
  });
  const KvFetch sent = sample_fetch();
  EXPECT_EQ(seen.request_id, sent.request_id);
  EXPECT_EQ(seen.cache_salt, sent.cache_salt);
  EXPECT_EQ(seen.format, sent.format);
  EXPECT_EQ(seen.n_known, sent.n_known);
  EXPECT_EQ(seen.tokens, sent.tokens);
}

TEST(FetchAnswer, NothingHeldIsNotFound) {
  EXPECT_EQ(answer([](const KvFetch&) { return std::optional<PromptKv>(); }).status, AnswerStatus::NotFound);
}

TEST(FetchAnswer, WhatTheSourceThrowsBecomesAnErrorAnswer) {
  const FetchAnswer lumen_error =
      answer([](const KvFetch&) -> std::optional<PromptKv> { fail("request {} was aborted", 41); });
  EXPECT_EQ(lumen_error.status, AnswerStatus::Error);
  EXPECT_EQ(lumen_error.error, "request 41 was aborted");

  const FetchAnswer std_error =
      answer([](const KvFetch&) -> std::optional<PromptKv> { throw std::runtime_error("map::at"); });
  EXPECT_EQ(std_error.status, AnswerStatus::Error);
  EXPECT_EQ(std_error.error, "internal error in the prefill instance: map::at");

  const FetchAnswer anything = answer([](const KvFetch&) -> std::optional<PromptKv> { throw 42; });
  EXPECT_EQ(anything.status, AnswerStatus::Error);
  EXPECT_EQ(anything.error, "internal error in the prefill instance");
}

TEST(FetchAnswer, KvInAnotherFormatIsAnErrorNamingBoth) {
  const FetchAnswer got = answer([](const KvFetch&) {
    PromptKv kv = sample_kv();
    kv.format = 0x1234;
    return kv;
  });
  ASSERT_EQ(got.status, AnswerStatus::Error);
  EXPECT_NE(got.error.find("format mismatch"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("0x0000000000001234"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("0x0000000000005eed"), std::string::npos) << got.error;
}

TEST(FetchAnswer, KvThatCannotBeSentIsAnError) {
  const FetchAnswer got = answer([](const KvFetch&) {
    PromptKv kv = sample_kv();
    kv.pages[1].resize(31);
    return kv;
  });
  ASSERT_EQ(got.status, AnswerStatus::Error);
  EXPECT_NE(got.error.find("page 1 is 31 bytes"), std::string::npos) << got.error;
}

TEST(FetchAnswer, AMalformedFetchIsAnErrorAndNeverReachesTheSource) {
  bool asked = false;
  const KvSource source = [&](const KvFetch&) -> std::optional<PromptKv> {
    asked = true;
    return std::nullopt;
  };
  std::vector<Frame> request = encode_fetch(sample_fetch());
  request[0][0] = 'X';
  const FetchAnswer got = answer(request, source);
  ASSERT_EQ(got.status, AnswerStatus::Error);
  EXPECT_NE(got.error.find("bad magic"), std::string::npos) << got.error;
  EXPECT_EQ(answer({}, source).status, AnswerStatus::Error);
  EXPECT_FALSE(asked);
}

}  // namespace
}  // namespace lumen::kv_transfer
