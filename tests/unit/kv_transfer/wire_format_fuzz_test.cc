// The decoders face another machine's bytes: every truncation of a valid message, corrupted
// headers and random frames must end in a lumen::Error or a well-formed result, never a crash, a
// read out of bounds (the sanitizer build) or a huge allocation. Seeded, so a failure repeats.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kv_transfer/wire_format.h"
#include "lumen/error.h"

namespace lumen::kv_transfer {
namespace {

constexpr AnswerBounds kBounds{16, 8};

std::vector<Frame> valid_fetch() {
  KvFetch fetch;
  fetch.request_id = 9;
  fetch.cache_salt = 3;
  fetch.format = 77;
  fetch.n_known = 4;
  fetch.tokens = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  return encode_fetch(fetch);
}

std::vector<Frame> valid_found() {
  PromptKv kv;
  kv.format = 77;
  kv.cache_salt = 3;
  kv.tokens = {10, 11, 12, 13, 14, 15, 16, 17};
  kv.n_known = 4;
  kv.pages = {Frame(16, 1), Frame(16, 2), Frame(16, 3)};
  return encode_found(kv);
}

// Whether decoding succeeded; a lumen::Error is the other allowed outcome. A result must be
// consistent with itself, as the receiver will trust it.
bool fetch_decodes(const std::vector<Frame>& frames) {
  try {
    const KvFetch fetch = decode_fetch(frame_views(frames));
    EXPECT_GE(fetch.n_known, 0);
    EXPECT_LE(static_cast<uint64_t>(fetch.n_known), fetch.tokens.size());
    EXPECT_LE(fetch.tokens.size(), kMaxTokens);
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool answer_decodes(const std::vector<Frame>& frames) {
  try {
    const FetchAnswer answer = decode_answer(frame_views(frames), kBounds);
    if (answer.status == AnswerStatus::Found) {
      EXPECT_GE(answer.kv.n_known, 0);
      EXPECT_LE(static_cast<uint64_t>(answer.kv.n_known), answer.kv.tokens.size());
      EXPECT_LE(answer.kv.pages.size(), kBounds.max_pages);
      for (const auto& page : answer.kv.pages) EXPECT_EQ(page.size(), kBounds.page_bytes);
    }
    if (answer.status == AnswerStatus::Error) {
      EXPECT_LE(answer.error.size(), kMaxErrorBytes);
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Every message made from `frames` by cutting one frame short, or by leaving frames out at the end.
std::vector<std::vector<Frame>> truncations(const std::vector<Frame>& frames) {
  std::vector<std::vector<Frame>> out;
  for (size_t f = 0; f < frames.size(); ++f) {
    for (size_t length = 0; length < frames[f].size(); ++length) {
      std::vector<Frame> cut = frames;
      cut[f].resize(length);
      out.push_back(std::move(cut));
    }
  }
  for (size_t n = 0; n < frames.size(); ++n) {
    out.emplace_back(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return out;
}

TEST(WireFormatFuzz, EveryTruncationOfAFetchIsRefused) {
  ASSERT_TRUE(fetch_decodes(valid_fetch()));
  for (const auto& cut : truncations(valid_fetch())) EXPECT_FALSE(fetch_decodes(cut));
}

TEST(WireFormatFuzz, EveryTruncationOfAFoundAnswerIsRefused) {
  ASSERT_TRUE(answer_decodes(valid_found()));
  for (const auto& cut : truncations(valid_found())) EXPECT_FALSE(answer_decodes(cut));
}

TEST(WireFormatFuzz, TruncatedStatusAnswersAreRefused) {
  for (const auto& cut : truncations(encode_not_found())) EXPECT_FALSE(answer_decodes(cut));
  // An error message cut short is still a message; only the header and the frame count matter.
  const std::vector<Frame> error = encode_error("the request is gone");
  for (size_t length = 0; length < error[0].size(); ++length) {
    std::vector<Frame> cut = error;
    cut[0].resize(length);
    EXPECT_FALSE(answer_decodes(cut));
  }
  EXPECT_FALSE(answer_decodes({error[0]}));
}

// Each header byte set to values that matter to a little-endian count (0, 1, 0x7f, 0x80, 0xff)
// and to random ones: decoding stays within the frames whatever the header claims.
TEST(WireFormatFuzz, CorruptedHeadersNeverCrash) {
  std::mt19937 random(20240611);
  const std::vector<uint8_t> values = {0, 1, 0x7f, 0x80, 0xff};
  for (const bool fetch : {true, false}) {
    const std::vector<Frame> valid = fetch ? valid_fetch() : valid_found();
    for (size_t at = 0; at < valid[0].size(); ++at) {
      std::vector<uint8_t> tried = values;
      for (int i = 0; i < 4; ++i) tried.push_back(static_cast<uint8_t>(random()));
      for (const uint8_t value : tried) {
        std::vector<Frame> corrupted = valid;
        corrupted[0][at] = value;
        if (fetch) {
          fetch_decodes(corrupted);
        } else {
          answer_decodes(corrupted);
        }
      }
    }
  }
}

// Random frames, half of them behind a valid magic, version and status so that decoding gets past
// the first checks into the counts.
TEST(WireFormatFuzz, RandomFramesNeverCrash) {
  std::mt19937 random(7);
  auto below = [&](uint32_t n) { return static_cast<size_t>(random() % n); };
  for (int round = 0; round < 20000; ++round) {
    std::vector<Frame> frames(below(6));
    for (Frame& frame : frames) {
      frame.resize(below(4) == 0 ? below(200) : below(70));
      for (uint8_t& byte : frame) byte = static_cast<uint8_t>(random());
    }
    if (!frames.empty() && frames[0].size() >= kAnswerStatusBytes && below(2) == 0) {
      const Frame preamble = encode_not_found()[0];
      std::copy(preamble.begin(), preamble.begin() + 8, frames[0].begin());
      frames[0][8] = static_cast<uint8_t>(1 + below(3));  // Found, NotFound or Error
      frames[0][9] = frames[0][10] = frames[0][11] = 0;
    }
    fetch_decodes(frames);
    answer_decodes(frames);
  }
}

}  // namespace
}  // namespace lumen::kv_transfer
