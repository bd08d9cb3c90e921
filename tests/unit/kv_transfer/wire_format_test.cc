// The wire format, version 1, without sockets: what each message looks like as bytes, round trips,
// and each way a message can be malformed or past the receiver's bounds.
#include "kv_transfer/wire_format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lumen/error.h"

namespace lumen::kv_transfer {
namespace {

KvFetch sample_fetch() {
  KvFetch fetch;
  fetch.request_id = 0x0102030405060708;
  fetch.cache_salt = 0xfeedface;
  fetch.format = 0xabcdef0123456789;
  fetch.n_known = 32;
  fetch.tokens = {1,  -2, 70000, 4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17,
                  18, 19, 20,    21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
  return fetch;
}

PromptKv sample_kv(size_t n_pages, size_t page_bytes) {
  PromptKv kv;
  kv.format = 0xabcdef0123456789;
  kv.cache_salt = 0xfeedface;
  kv.tokens = {5, 6, 7, 8, -1, 0, 1 << 30, 3};
  kv.n_known = 4;
  for (size_t p = 0; p < n_pages; ++p) {
    std::vector<uint8_t> page(page_bytes);
    for (size_t i = 0; i < page_bytes; ++i) page[i] = static_cast<uint8_t>(p * 31 + i * 7);
    kv.pages.push_back(page);
  }
  return kv;
}

void put_u64(Frame& frame, size_t offset, uint64_t value) {
  for (size_t i = 0; i < 8; ++i) frame.at(offset + i) = static_cast<uint8_t>(value >> (8 * i));
}

void put_u32(Frame& frame, size_t offset, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) frame.at(offset + i) = static_cast<uint8_t>(value >> (8 * i));
}

KvFetch decode_fetch_frames(const std::vector<Frame>& frames) { return decode_fetch(frame_views(frames)); }

FetchAnswer decode_answer_frames(const std::vector<Frame>& frames, size_t page_bytes = 16, size_t max_pages = 8) {
  return decode_answer(frame_views(frames), AnswerBounds{page_bytes, max_pages});
}

// The message of the lumen::Error that `f` throws ("" and a test failure when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no lumen::Error";
  return "";
}

TEST(WireFormat, FetchHeaderBytesAreVersionOneLittleEndian) {
  const std::vector<Frame> frames = encode_fetch(sample_fetch());
  ASSERT_EQ(frames.size(), 2u);
  // clang-format off
  const Frame expected_header = {
      'L', 'K', 'V', 'T', 1, 0, 0, 0,                   // magic, version
      8, 7, 6, 5, 4, 3, 2, 1,                           // request_id
      0xce, 0xfa, 0xed, 0xfe, 0, 0, 0, 0,               // cache_salt
      0x89, 0x67, 0x45, 0x23, 0x01, 0xef, 0xcd, 0xab,   // format
      32, 0, 0, 0, 0, 0, 0, 0,                          // n_known
      33, 0, 0, 0, 0, 0, 0, 0};                         // n_tokens
  // clang-format on
  EXPECT_EQ(frames[0], expected_header);
  ASSERT_EQ(frames[1].size(), 33u * 4);
  EXPECT_EQ((Frame(frames[1].begin(), frames[1].begin() + 8)), (Frame{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}));
}

TEST(WireFormat, FetchRoundTrips) {
  const KvFetch sent = sample_fetch();
  const KvFetch got = decode_fetch_frames(encode_fetch(sent));
  EXPECT_EQ(got.request_id, sent.request_id);
  EXPECT_EQ(got.cache_salt, sent.cache_salt);
  EXPECT_EQ(got.format, sent.format);
  EXPECT_EQ(got.n_known, sent.n_known);
  EXPECT_EQ(got.tokens, sent.tokens);
}

TEST(WireFormat, EmptyPromptRoundTrips) {
  const KvFetch got = decode_fetch_frames(encode_fetch(KvFetch{}));
  EXPECT_TRUE(got.tokens.empty());
  EXPECT_EQ(got.n_known, 0);
}

TEST(WireFormat, FoundRoundTripsWithOneFramePerPage) {
  const PromptKv sent = sample_kv(3, 16);
  const std::vector<Frame> frames = encode_found(sent);
  ASSERT_EQ(frames.size(), 2u + 3u);
  EXPECT_EQ(frames[0].size(), kFoundHeaderBytes);
  const FetchAnswer got = decode_answer_frames(frames);
  ASSERT_EQ(got.status, AnswerStatus::Found);
  EXPECT_EQ(got.kv.format, sent.format);
  EXPECT_EQ(got.kv.cache_salt, sent.cache_salt);
  EXPECT_EQ(got.kv.n_known, sent.n_known);
  EXPECT_EQ(got.kv.tokens, sent.tokens);
  EXPECT_EQ(got.kv.pages, sent.pages);
}

TEST(WireFormat, FoundWithoutPagesSaysPageBytesZero) {
  const std::vector<Frame> frames = encode_found(sample_kv(0, 0));
  ASSERT_EQ(frames.size(), 2u);
  const FetchAnswer got = decode_answer_frames(frames);
  ASSERT_EQ(got.status, AnswerStatus::Found);
  EXPECT_TRUE(got.kv.pages.empty());

  std::vector<Frame> claims_page_bytes = frames;
  put_u64(claims_page_bytes[0], 44, 16);
  EXPECT_NE(error_of([&] { decode_answer_frames(claims_page_bytes); }).find("with no pages"), std::string::npos);
}

TEST(WireFormat, NotFoundAndErrorRoundTrip) {
  EXPECT_EQ(decode_answer_frames(encode_not_found()).status, AnswerStatus::NotFound);
  const FetchAnswer error = decode_answer_frames(encode_error("no such request"));
  EXPECT_EQ(error.status, AnswerStatus::Error);
  EXPECT_EQ(error.error, "no such request");
}

TEST(WireFormat, LongErrorMessagesAreCutBetweenCharacters) {
  // 1023 bytes of ASCII, then a two-byte character straddling the 1024-byte bound.
  const std::string message = std::string(kMaxErrorBytes - 1, 'a') + "\xc3\xa9" + "tail";
  const std::vector<Frame> frames = encode_error(message);
  EXPECT_EQ(frames[1].size(), kMaxErrorBytes - 1);
  EXPECT_EQ(decode_answer_frames(frames).error, std::string(kMaxErrorBytes - 1, 'a'));
}

TEST(WireFormat, ErrorMessagesArriveOnOneLine) {
  EXPECT_EQ(decode_answer_frames(encode_error("first\nsecond\x1b[31m")).error, "first second [31m");
}

TEST(WireFormat, EncodersRefuseWhatCannotBeSent) {
  KvFetch too_long;
  too_long.tokens.resize(kMaxTokens + 1);
  EXPECT_NE(error_of([&] { encode_fetch(too_long); }).find("more than the bound"), std::string::npos);
  KvFetch known_past_end = sample_fetch();
  known_past_end.n_known = 34;
  EXPECT_NE(error_of([&] { encode_fetch(known_past_end); }).find("n_known 34"), std::string::npos);
  known_past_end.n_known = -1;
  EXPECT_NE(error_of([&] { encode_fetch(known_past_end); }).find("n_known -1"), std::string::npos);

  PromptKv uneven = sample_kv(3, 16);
  uneven.pages[2].resize(15);
  EXPECT_NE(error_of([&] { encode_found(uneven); }).find("page 2 is 15 bytes"), std::string::npos);
  PromptKv empty_pages = sample_kv(2, 0);
  EXPECT_NE(error_of([&] { encode_found(empty_pages); }).find("page 0 is empty"), std::string::npos);
}

// Each malformed fetch, and the words its error must contain.
TEST(WireFormat, MalformedFetchesAreRefusedWithTheReason) {
  const std::vector<Frame> good = encode_fetch(sample_fetch());
  struct Case {
    std::string name;
    std::vector<Frame> frames;
    std::string expected;
  };
  std::vector<Case> cases;
  auto with = [&](std::string name, std::string expected, auto change) {
    std::vector<Frame> frames = good;
    change(frames);
    cases.push_back({std::move(name), std::move(frames), std::move(expected)});
  };
  with("no frames", "0 frames", [](auto& f) { f.clear(); });
  with("header only", "1 frames", [](auto& f) { f.pop_back(); });
  with("extra frame", "3 frames", [](auto& f) { f.push_back(Frame{1, 2}); });
  with("short header", "header frame is 47 bytes", [](auto& f) { f[0].pop_back(); });
  with("long header", "header frame is 49 bytes", [](auto& f) { f[0].push_back(0); });
  with("wrong magic", "bad magic", [](auto& f) { f[0][0] = 'X'; });
  with("wrong version", "wire version 2", [](auto& f) { put_u32(f[0], 4, 2); });
  with("huge token count", "more than the bound", [](auto& f) { put_u64(f[0], 40, uint64_t{1} << 40); });
  with("largest token count", "more than the bound", [](auto& f) { put_u64(f[0], 40, ~uint64_t{0}); });
  with("fewer token bytes", "tokens frame is 128 bytes", [](auto& f) { f[1].resize(128); });
  with("token bytes not whole", "tokens frame is 133 bytes", [](auto& f) { f[1].push_back(0); });
  with("negative n_known", "n_known -1", [](auto& f) { put_u64(f[0], 32, ~uint64_t{0}); });
  with("n_known past the prompt", "n_known 34", [](auto& f) { put_u64(f[0], 32, 34); });
  for (const Case& c : cases) {
    const std::string message = error_of([&] { decode_fetch_frames(c.frames); });
    EXPECT_NE(message.find("malformed KV fetch"), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << ": " << message;
  }
}

TEST(WireFormat, MalformedOrOversizedAnswersAreRefusedWithTheReason) {
  const std::vector<Frame> good = encode_found(sample_kv(3, 16));
  struct Case {
    std::string name;
    std::vector<Frame> frames;
    std::string expected;
  };
  std::vector<Case> cases;
  auto with = [&](std::string name, std::string expected, const std::vector<Frame>& base, auto change) {
    std::vector<Frame> frames = base;
    change(frames);
    cases.push_back({std::move(name), std::move(frames), std::move(expected)});
  };
  with("no frames", "no frames", good, [](auto& f) { f.clear(); });
  with("short status header", "shorter than 12", good, [](auto& f) { f[0].resize(11); });
  with("short Found header", "this one 59", good, [](auto& f) { f[0].pop_back(); });
  with("wrong magic", "bad magic", good, [](auto& f) { f[0][3] = 'X'; });
  with("wrong version", "wire version 0", good, [](auto& f) { put_u32(f[0], 4, 0); });
  with("unknown status", "unknown status 4", good, [](auto& f) { put_u32(f[0], 8, 4); });
  with("a page missing", "4 frames", good, [](auto& f) { f.pop_back(); });
  with("a page extra", "6 frames", good, [](auto& f) { f.push_back(Frame(16)); });
  with("a short page", "page 1 is 15 bytes", good, [](auto& f) { f[3].pop_back(); });
  with("another page size", "pages of 32 bytes", good, [](auto& f) { put_u64(f[0], 44, 32); });
  with("too many pages", "more than the 8", good, [](auto& f) { put_u64(f[0], 52, 9); });
  with("huge token count", "more than the bound", good, [](auto& f) { put_u64(f[0], 36, uint64_t{1} << 33); });
  with("token count mismatch", "tokens frame is 32 bytes", good, [](auto& f) { put_u64(f[0], 36, 7); });
  with("negative n_known", "n_known -5", good, [](auto& f) { put_u64(f[0], 28, static_cast<uint64_t>(-5)); });
  with("n_known past the tokens", "n_known 9", good, [](auto& f) { put_u64(f[0], 28, 9); });
  with("NotFound with more", "NotFound answer is one frame", encode_not_found(), [](auto& f) { f.push_back({}); });
  with("NotFound long header", "NotFound answer is one frame", encode_not_found(), [](auto& f) { f[0].push_back(0); });
  with("Error without message", "an Error answer is", encode_error("x"), [](auto& f) { f.pop_back(); });
  with("Error message too long", "more than 1024", encode_error("x"), [](auto& f) { f[1].resize(kMaxErrorBytes + 1); });
  for (const Case& c : cases) {
    const std::string message = error_of([&] { decode_answer_frames(c.frames); });
    EXPECT_NE(message.find("KV answer"), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << ": " << message;
  }
}

TEST(WireFormat, TheReceiversBoundsAreItsOwn) {
  const std::vector<Frame> frames = encode_found(sample_kv(3, 16));
  EXPECT_EQ(decode_answer_frames(frames, 16, 3).kv.pages.size(), 3u);
  EXPECT_NE(error_of([&] { decode_answer_frames(frames, 16, 2); }).find("3 pages, more than the 2"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_answer_frames(frames, 8, 3); }).find("pages of 16 bytes, this cache's are 8"),
            std::string::npos);
  EXPECT_NO_THROW(decode_answer_frames(frames, 16, std::numeric_limits<size_t>::max()));
  // A page count that would wrap the expected frame count around: still a count mismatch.
  std::vector<Frame> wrapping = frames;
  put_u64(wrapping[0], 52, ~uint64_t{0});
  EXPECT_NE(error_of([&] { decode_answer_frames(wrapping, 16, std::numeric_limits<size_t>::max()); }).find("5 frames"),
            std::string::npos);
}

}  // namespace
}  // namespace lumen::kv_transfer
