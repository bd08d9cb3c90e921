// A server and its askers over real sockets on 127.0.0.1: K/V arrives byte for byte, NotFound and
// the source's errors arrive as such, and every way a fetch can fail ends in a lumen::Error that
// names the endpoint, within the timeout.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kv_transfer/kv_transfer_client.h"
#include "kv_transfer/kv_transfer_server.h"
#include "kv_transfer/wire_format.h"
#include "lumen/error.h"
#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

using std::chrono::milliseconds;

constexpr char kAnyPort[] = "tcp://127.0.0.1:*";
constexpr uint64_t kFormat = 0xf00dcafe;
constexpr uint64_t kSalt = 17;
constexpr size_t kPageBytes = 300 * 1000;
constexpr milliseconds kTimeout{5000};

// A prompt of 64 tokens whose last 48 (3 blocks of 16) come as 4 pages of random bytes.
PromptKv sample_kv(uint32_t seed = 1) {
  PromptKv kv;
  kv.format = kFormat;
  kv.cache_salt = kSalt;
  for (int32_t t = 0; t < 64; ++t) kv.tokens.push_back(1000 + t);
  kv.n_known = 16;
  std::mt19937 random(seed);
  for (int p = 0; p < 4; ++p) {
    std::vector<uint8_t> page(kPageBytes);
    for (uint8_t& byte : page) byte = static_cast<uint8_t>(random());
    kv.pages.push_back(std::move(page));
  }
  return kv;
}

KvFetch fetch_of(const PromptKv& kv, uint64_t request_id = 5) {
  KvFetch fetch;
  fetch.request_id = request_id;
  fetch.cache_salt = kv.cache_salt;
  fetch.format = kv.format;
  fetch.n_known = kv.n_known;
  fetch.tokens = kv.tokens;
  fetch.tokens.push_back(7);  // the prompt's last token, never part of the K/V sent
  return fetch;
}

KvTransferServer::Source serving(PromptKv kv) {
  return [kv](const KvFetch&) { return std::optional<PromptKv>(kv); };
}

std::string error_of_fetch(const std::string& endpoint, const KvFetch& fetch, size_t page_bytes = kPageBytes,
                           size_t max_pages = 16, milliseconds timeout = kTimeout) {
  try {
    fetch_prompt_kv(endpoint, fetch, page_bytes, max_pages, timeout);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the fetch did not throw";
  return "";
}

TEST(KvTransfer, AFetchGetsThePromptKvByteForByte) {
  const PromptKv kv = sample_kv();
  KvTransferServer server(kAnyPort, serving(kv));
  EXPECT_NE(server.endpoint().find("tcp://127.0.0.1:"), std::string::npos);
  EXPECT_EQ(server.endpoint().find('*'), std::string::npos) << server.endpoint();

  const std::optional<PromptKv> got = fetch_prompt_kv(server.endpoint(), fetch_of(kv), kPageBytes, 16, kTimeout);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->format, kv.format);
  EXPECT_EQ(got->cache_salt, kv.cache_salt);
  EXPECT_EQ(got->n_known, kv.n_known);
  EXPECT_EQ(got->tokens, kv.tokens);
  ASSERT_EQ(got->pages.size(), kv.pages.size());
  for (size_t p = 0; p < kv.pages.size(); ++p) EXPECT_TRUE(got->pages[p] == kv.pages[p]) << "page " << p;
}

TEST(KvTransfer, TheSourceSeesTheFetchAsSent) {
  std::mutex mutex;
  KvFetch seen;
  KvTransferServer server(kAnyPort, [&](const KvFetch& fetch) -> std::optional<PromptKv> {
    std::lock_guard lock(mutex);
    seen = fetch;
    return std::nullopt;
  });
  const KvFetch sent = fetch_of(sample_kv(), 123456789012345);
  EXPECT_FALSE(fetch_prompt_kv(server.endpoint(), sent, kPageBytes, 16, kTimeout).has_value());
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen.request_id, sent.request_id);
  EXPECT_EQ(seen.cache_salt, sent.cache_salt);
  EXPECT_EQ(seen.format, sent.format);
  EXPECT_EQ(seen.n_known, sent.n_known);
  EXPECT_EQ(seen.tokens, sent.tokens);
}

TEST(KvTransfer, NothingHeldIsNullopt) {
  KvTransferServer server(kAnyPort, [](const KvFetch&) { return std::optional<PromptKv>(); });
  EXPECT_FALSE(fetch_prompt_kv(server.endpoint(), fetch_of(sample_kv()), kPageBytes, 16, kTimeout).has_value());
}

TEST(KvTransfer, TheSourcesErrorReachesTheAskerWithTheEndpoint) {
  KvTransferServer server(kAnyPort, [](const KvFetch& fetch) -> std::optional<PromptKv> {
    fail("request {} was aborted before its prompt was computed", fetch.request_id);
  });
  const std::string message = error_of_fetch(server.endpoint(), fetch_of(sample_kv(), 77));
  EXPECT_NE(message.find("request 77 was aborted before its prompt was computed"), std::string::npos) << message;
  EXPECT_NE(message.find(server.endpoint()), std::string::npos) << message;
  EXPECT_NE(message.find("request 77"), std::string::npos) << message;
  // The server goes on serving.
  EXPECT_NE(error_of_fetch(server.endpoint(), fetch_of(sample_kv(), 78)).find("request 78 was aborted"),
            std::string::npos);
}

TEST(KvTransfer, NoServerMeansATimeoutWithinTheTimeout) {
  std::string endpoint;
  {
    KvTransferServer gone(kAnyPort, serving(sample_kv()));
    endpoint = gone.endpoint();  // a port nobody listens on once the server is gone
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of_fetch(endpoint, fetch_of(sample_kv()), kPageBytes, 16, milliseconds{200});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, milliseconds{195});
  EXPECT_LT(elapsed, milliseconds{5000});
  EXPECT_NE(message.find("no answer within 200 ms"), std::string::npos) << message;
  EXPECT_NE(message.find(endpoint), std::string::npos) << message;
}

TEST(KvTransfer, AnotherPageSizeOrTooManyPagesIsRefused) {
  KvTransferServer server(kAnyPort, serving(sample_kv()));
  const KvFetch fetch = fetch_of(sample_kv());
  EXPECT_NE(
      error_of_fetch(server.endpoint(), fetch, kPageBytes / 2).find("pages of 300000 bytes, this cache's are 150000"),
      std::string::npos);
  EXPECT_NE(error_of_fetch(server.endpoint(), fetch, kPageBytes * 2).find("pages of 300000 bytes"), std::string::npos);
  EXPECT_NE(error_of_fetch(server.endpoint(), fetch, kPageBytes, 3).find("4 pages, more than the 3"),
            std::string::npos);
  EXPECT_TRUE(fetch_prompt_kv(server.endpoint(), fetch, kPageBytes, 4, kTimeout).has_value());
}

TEST(KvTransfer, AFetchInAnotherFormatIsRefusedByTheServer) {
  KvTransferServer server(kAnyPort, serving(sample_kv()));
  KvFetch fetch = fetch_of(sample_kv());
  fetch.format = 1;
  const std::string message = error_of_fetch(server.endpoint(), fetch);
  EXPECT_NE(message.find("answered with an error: KV format mismatch"), std::string::npos) << message;
}

// The client checks that the answer is for this fetch even when the server's source got it wrong.
TEST(KvTransfer, AnAnswerForAnotherSaltOrPromptIsRefused) {
  PromptKv other_salt = sample_kv();
  other_salt.cache_salt = kSalt + 1;
  KvTransferServer salted(kAnyPort, serving(other_salt));
  EXPECT_NE(error_of_fetch(salted.endpoint(), fetch_of(sample_kv())).find("cache_salt 0x12, the fetch's is 0x11"),
            std::string::npos);

  PromptKv other_prompt = sample_kv();
  other_prompt.tokens[3] = -1;
  KvTransferServer prompted(kAnyPort, serving(other_prompt));
  EXPECT_NE(error_of_fetch(prompted.endpoint(), fetch_of(sample_kv())).find("do not begin the fetch's prompt"),
            std::string::npos);

  KvFetch shorter = fetch_of(sample_kv());
  shorter.tokens.resize(10);
  shorter.n_known = 0;
  KvTransferServer plain(kAnyPort, serving(sample_kv()));
  EXPECT_NE(error_of_fetch(plain.endpoint(), shorter).find("64 tokens do not begin the fetch's prompt of 10"),
            std::string::npos);
}

TEST(KvTransfer, EightThreadsFetchAtOnce) {
  const PromptKv kv = sample_kv();
  KvTransferServer server(kAnyPort, serving(kv));
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        const auto got = fetch_prompt_kv(server.endpoint(), fetch_of(kv, static_cast<uint64_t>(t * 10 + i)), kPageBytes,
                                         16, kTimeout);
        if (got && got->pages == kv.pages && got->tokens == kv.tokens) ++good;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(good.load(), 24);
}

TEST(KvTransfer, AnEndpointInUseOrMalformedIsAnErrorNamingIt) {
  KvTransferServer first(kAnyPort, serving(sample_kv()));
  try {
    KvTransferServer second(first.endpoint(), serving(sample_kv()));
    ADD_FAILURE() << "bound " << first.endpoint() << " twice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on '" + first.endpoint() + "'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(KvTransferServer("not an endpoint", serving(sample_kv())), Error);
  EXPECT_THROW(KvTransferServer(kAnyPort, nullptr), Error);
  const std::string message = error_of_fetch("not an endpoint", fetch_of(sample_kv()));
  EXPECT_NE(message.find("cannot connect"), std::string::npos) << message;
  EXPECT_NE(message.find("not an endpoint"), std::string::npos) << message;
}

TEST(KvTransfer, AFetchPastTheBoundsIsRefusedBeforeItLeaves) {
  KvFetch huge;
  huge.tokens.resize(kMaxTokens + 1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of_fetch("tcp://127.0.0.1:9", huge).find("more than the bound"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds{1000});
  EXPECT_NE(error_of_fetch("tcp://127.0.0.1:9", fetch_of(sample_kv()), 0).find("page_bytes is 0"), std::string::npos);
}

TEST(KvTransfer, StopIsPromptAndFinal) {
  KvTransferServer server(kAnyPort, serving(sample_kv()));
  const std::string endpoint = server.endpoint();
  const auto start = std::chrono::steady_clock::now();
  server.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds{1000});
  server.stop();  // again: nothing to do
  EXPECT_NE(error_of_fetch(endpoint, fetch_of(sample_kv()), kPageBytes, 16, milliseconds{100}).find("no answer"),
            std::string::npos);
}

}  // namespace
}  // namespace lumen::kv_transfer
