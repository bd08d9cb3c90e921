// Peers that do not speak the protocol, through raw ZeroMQ sockets: each malformed fetch gets an
// Error answer, a frame past the server's cap gets the peer dropped without an answer, a peer that
// leaves before its answer costs nothing, and through all of it the server goes on serving.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "kv_transfer/kv_transfer_client.h"
#include "kv_transfer/kv_transfer_server.h"
#include "kv_transfer/wire_format.h"
#include "kv_transfer/zmq_io.h"

namespace lumen::kv_transfer {
namespace {

using std::chrono::milliseconds;

constexpr size_t kPageBytes = 4096;

PromptKv sample_kv() {
  PromptKv kv;
  kv.format = 11;
  kv.cache_salt = 0;
  kv.tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  kv.pages = {std::vector<uint8_t>(kPageBytes, 0xaa), std::vector<uint8_t>(kPageBytes, 0x55)};
  return kv;
}

KvFetch good_fetch() {
  KvFetch fetch;
  fetch.format = 11;
  fetch.tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  return fetch;
}

class HostilePeer : public ::testing::Test {
 protected:
  HostilePeer() : server_("tcp://127.0.0.1:*", [](const KvFetch&) { return std::optional<PromptKv>(sample_kv()); }) {}

  zmq::socket_t peer(zmq::socket_type type) {
    zmq::socket_t socket(zmq_context(), type);
    socket.set(zmq::sockopt::linger, 0);
    socket.connect(server_.endpoint());
    return socket;
  }

  // Sends `frames` as one message and returns the answer's frames (none when none came in time).
  static std::vector<Frame> exchange(zmq::socket_t& socket, const std::vector<Frame>& frames,
                                     milliseconds timeout = milliseconds{5000}) {
    std::vector<zmq::message_t> parts;
    for (const Frame& frame : frames) parts.emplace_back(frame.data(), frame.size());
    EXPECT_TRUE(send_message(socket, parts));
    if (!wait_readable(socket, timeout)) return {};
    std::vector<Frame> answer;
    for (const zmq::message_t& part : receive_message(socket)) {
      answer.emplace_back(part.data<uint8_t>(), part.data<uint8_t>() + part.size());
    }
    return answer;
  }

  void expect_still_serving() {
    const auto got = fetch_prompt_kv(server_.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{5000});
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->pages, sample_kv().pages);
  }

  KvTransferServer server_;
};

TEST_F(HostilePeer, EachMalformedFetchGetsAnErrorAnswerAndServingGoesOn) {
  const std::vector<Frame> good = encode_fetch(good_fetch());
  Frame wrong_magic = good[0];
  wrong_magic[1] = 'Z';
  Frame claims_huge = good[0];
  claims_huge[40 + 5] = 1;  // n_tokens 2^40
  Frame claims_more = good[0];
  claims_more[40] = 200;  // 200 tokens, 9 sent
  const std::vector<std::vector<Frame>> garbage = {
      {Frame{1, 2, 3}},
      {Frame(kFetchHeaderBytes - 1, 0), good[1]},
      {wrong_magic, good[1]},
      {claims_huge, Frame{}},
      {claims_more, good[1]},
      {good[0]},
      {good[0], good[1], Frame{0}},
      {good[0], good[1], good[0], good[1]},
      {Frame(kFetchHeaderBytes, 0xff), Frame(100, 0xff)},
  };
  zmq::socket_t dealer = peer(zmq::socket_type::dealer);
  for (size_t i = 0; i < garbage.size(); ++i) {
    const std::vector<Frame> answer = exchange(dealer, garbage[i]);
    ASSERT_FALSE(answer.empty()) << "garbage " << i << " got no answer";
    const FetchAnswer decoded = decode_answer(frame_views(answer), AnswerBounds{kPageBytes, 8});
    EXPECT_EQ(decoded.status, AnswerStatus::Error) << "garbage " << i;
    EXPECT_NE(decoded.error.find("malformed KV fetch"), std::string::npos) << "garbage " << i << ": " << decoded.error;
  }
  // The same connection, now speaking properly.
  const FetchAnswer fine = decode_answer(frame_views(exchange(dealer, good)), AnswerBounds{kPageBytes, 8});
  EXPECT_EQ(fine.status, AnswerStatus::Found);
  expect_still_serving();
}

TEST_F(HostilePeer, AReqPeerIsAnsweredThroughItsEnvelope) {
  zmq::socket_t req = peer(zmq::socket_type::req);
  const FetchAnswer found =
      decode_answer(frame_views(exchange(req, encode_fetch(good_fetch()))), AnswerBounds{kPageBytes, 8});
  ASSERT_EQ(found.status, AnswerStatus::Found);
  EXPECT_EQ(found.kv.pages, sample_kv().pages);
  const FetchAnswer error = decode_answer(frame_views(exchange(req, {Frame{9}})), AnswerBounds{kPageBytes, 8});
  EXPECT_EQ(error.status, AnswerStatus::Error);
}

TEST_F(HostilePeer, AFramePastTheCapIsDroppedWithoutAnAnswer) {
  zmq::socket_t dealer = peer(zmq::socket_type::dealer);
  const std::vector<Frame> oversized = {encode_fetch(good_fetch())[0], Frame(kMaxTokenFrameBytes + 1, 0)};
  EXPECT_TRUE(exchange(dealer, oversized, milliseconds{300}).empty());
  expect_still_serving();
}

TEST_F(HostilePeer, APeerThatLeavesBeforeItsAnswerCostsNothing) {
  for (int i = 0; i < 5; ++i) {
    zmq::socket_t dealer = peer(zmq::socket_type::dealer);
    std::vector<zmq::message_t> parts;
    for (Frame& frame : encode_fetch(good_fetch())) parts.push_back(frame_message(std::move(frame)));
    EXPECT_TRUE(send_message(dealer, parts));
  }  // each closes at once (linger 0), the fetch perhaps sent, its answer never read
  expect_still_serving();
}

}  // namespace
}  // namespace lumen::kv_transfer
