// GuardedStream on a real TCP connection: a head is read whole before httplib sees it, and
// every read of a request is bounded by its deadline and its byte budget.
#include "http/guarded_stream.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>

namespace lumen::http {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A connected pair of TCP sockets on the loopback interface.
struct TcpPair {
  int client = -1, server = -1;
  TcpPair() {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    listen(listener, 1);
    getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
    client = socket(AF_INET, SOCK_STREAM, 0);
    connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    server = accept(listener, nullptr, nullptr);
    close(listener);
  }
  ~TcpPair() {
    if (client >= 0) close(client);
    close(server);
  }
  void send_text(const std::string& text) const {
    ASSERT_EQ(send(client, text.data(), text.size(), 0), ssize_t(text.size()));
  }
};

// Reads what the stream delivers for one request, as httplib would.
std::string read_all(GuardedStream& stream, size_t bytes) {
  std::string out;
  char piece[7];  // small reads, like httplib's line reader
  while (out.size() < bytes) {
    const ssize_t got = stream.read(piece, std::min(sizeof(piece), bytes - out.size()));
    if (got <= 0) break;
    out.append(piece, static_cast<size_t>(got));
  }
  return out;
}

constexpr auto kWrite = milliseconds(1000);

TEST(GuardedStream, AHeadIsReadWholeThenDeliveredWithItsBody) {
  TcpPair pair;
  const std::string request = "POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
  pair.send_text(request);
  GuardedStream stream(pair.server, kWrite);
  const auto deadline = Clock::now() + milliseconds(2000);
  ASSERT_EQ(stream.read_head(HeadLimits{}, deadline, deadline), HeadWait::Ready);
  stream.begin_request(deadline, 1000);
  EXPECT_EQ(read_all(stream, request.size()), request);
}

TEST(GuardedStream, WaitsForAHeadSentInPieces) {
  TcpPair pair;
  std::thread slow([&] {
    for (const char* piece : {"GET / HT", "TP/1.1\r\nHo", "st: a\r\n", "\r\n"}) {
      std::this_thread::sleep_for(milliseconds(50));
      pair.send_text(piece);
    }
  });
  GuardedStream stream(pair.server, kWrite);
  const auto start = Clock::now();
  EXPECT_EQ(stream.read_head(HeadLimits{}, start + milliseconds(5000), start + milliseconds(5000)), HeadWait::Ready);
  EXPECT_GE(Clock::now() - start, milliseconds(150));
  slow.join();
}

TEST(GuardedStream, ASlowHeadTimesOutAtTheDeadline) {
  TcpPair pair;
  GuardedStream stream(pair.server, kWrite);
  std::thread drip([&] {
    pair.send_text("GET / HTTP/1.1\r\n");
    for (int i = 0; i < 8; ++i) {  // a line every 100 ms: no single wait is long
      std::this_thread::sleep_for(milliseconds(100));
      send(pair.client, "X: y\r\n", 6, MSG_NOSIGNAL);
    }
  });
  const auto start = Clock::now();
  EXPECT_EQ(stream.read_head(HeadLimits{}, start + milliseconds(300), start + milliseconds(300)), HeadWait::TimedOut);
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, milliseconds(300));
  EXPECT_LT(waited, milliseconds(1000));
  drip.join();
}

TEST(GuardedStream, AnIdleKeptAliveConnectionIsClosedNotTimedOut) {
  TcpPair pair;
  GuardedStream stream(pair.server, kWrite);
  const auto start = Clock::now();
  EXPECT_EQ(stream.read_head(HeadLimits{}, start + milliseconds(100), start + milliseconds(5000)), HeadWait::Closed);
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
}

TEST(GuardedStream, AHeaderFloodIsTooLargeAtTheLimit) {
  TcpPair pair;
  std::thread flood([&] {
    std::string lines = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 2000; ++i) lines += "x: y\r\n";
    send(pair.client, lines.data(), lines.size(), MSG_NOSIGNAL);
  });
  GuardedStream stream(pair.server, kWrite);
  const auto deadline = Clock::now() + milliseconds(5000);
  EXPECT_EQ(stream.read_head(HeadLimits{}, deadline, deadline), HeadWait::TooLarge);
  flood.join();
}

TEST(GuardedStream, APeerThatLeavesMidHeadIsClosed) {
  TcpPair pair;
  pair.send_text("GET / HTTP/1.1\r\nHo");
  shutdown(pair.client, SHUT_WR);
  GuardedStream stream(pair.server, kWrite);
  const auto start = Clock::now();
  EXPECT_EQ(stream.read_head(HeadLimits{}, start + milliseconds(5000), start + milliseconds(5000)), HeadWait::Closed);
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
}

TEST(GuardedStream, ASlowBodyFailsAtTheRequestDeadline) {
  TcpPair pair;
  pair.send_text("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n");
  GuardedStream stream(pair.server, kWrite);
  const auto start = Clock::now();
  ASSERT_EQ(stream.read_head(HeadLimits{}, start + milliseconds(300), start + milliseconds(300)), HeadWait::Ready);
  stream.begin_request(start + milliseconds(300), 1 << 20);
  std::thread drip([&] {
    for (int i = 0; i < 8; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
      send(pair.client, "a", 1, MSG_NOSIGNAL);
    }
  });
  const std::string got = read_all(stream, 44 + 100);
  EXPECT_LT(got.size(), 44u + 100u);
  EXPECT_TRUE(stream.timed_out());
  EXPECT_FALSE(stream.over_budget());
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  drip.join();
}

TEST(GuardedStream, ReadsPastTheBudgetFail) {
  TcpPair pair;
  const std::string head = "POST / HTTP/1.1\r\n\r\n";
  pair.send_text(head + std::string(5000, 'b'));
  GuardedStream stream(pair.server, kWrite);
  const auto deadline = Clock::now() + milliseconds(2000);
  ASSERT_EQ(stream.read_head(HeadLimits{}, deadline, deadline), HeadWait::Ready);
  stream.begin_request(deadline, head.size() + 1000);
  const std::string got = read_all(stream, head.size() + 5000);
  EXPECT_LE(got.size(), head.size() + 1000);
  EXPECT_TRUE(stream.over_budget());
  EXPECT_FALSE(stream.timed_out());
}

TEST(GuardedStream, ABufferedPipelinedRequestStaysForTheNextOne) {
  TcpPair pair;
  const std::string first = "GET /a HTTP/1.1\r\n\r\n", second = "GET /b HTTP/1.1\r\n\r\n";
  pair.send_text(first + second);
  GuardedStream stream(pair.server, kWrite);
  const auto deadline = Clock::now() + milliseconds(2000);
  ASSERT_EQ(stream.read_head(HeadLimits{}, deadline, deadline), HeadWait::Ready);
  stream.begin_request(deadline, 1000);
  EXPECT_EQ(read_all(stream, first.size()), first);
  ASSERT_EQ(stream.read_head(HeadLimits{}, deadline, deadline), HeadWait::Ready);
  stream.begin_request(deadline, 1000);
  EXPECT_EQ(read_all(stream, second.size()), second);
}

}  // namespace
}  // namespace lumen::http
