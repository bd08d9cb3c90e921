// What the KV-transfer port costs a prefill instance, bounded. With a deployment key (CURVE) key
// holders fetch as before, and a peer without the key, or with another, completes no handshake,
// so the attack of issue 47 (a multipart message of 4 MiB frames that never ends, which grew an
// unauthenticated server 1:1) costs the server nothing, while a key holder fetching meanwhile
// is served at once. Frames past the longest prompt and connections past the cap are dropped.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "kv_transfer/curve_auth.h"
#include "kv_transfer/kv_transfer_client.h"
#include "kv_transfer/kv_transfer_server.h"
#include "kv_transfer/transfer_key.h"
#include "kv_transfer/wire_format.h"
#include "lumen/error.h"
#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kPageBytes = 4096;

PromptKv sample_kv() {
  PromptKv kv;
  kv.format = 11;
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

KvTransferServer::Source serving() {
  return [](const KvFetch&) { return std::optional<PromptKv>(sample_kv()); };
}

TransferKey fresh_key() { return parse_transfer_key(generate_transfer_key_z85(), "a fresh key"); }

KvTransferServerOptions keyed(const TransferKey& key) {
  KvTransferServerOptions options;
  options.key = key;
  return options;
}

size_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Forks a peer that speaks ZMTP 3.0 by hand (NULL mechanism, no key: a stranger) to the server
// at 127.0.0.1:`port` and sends one multipart message of `frames` 4 MiB frames with no last
// frame, then waits to be killed. Plain syscalls: the child of a threaded process must not start
// a zmq context of its own.
pid_t start_flooder(int port, int frames) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) _exit(1);
  std::string hello(64, '\0');
  hello[0] = '\xff';
  hello[9] = '\x7f';
  hello[10] = 3;  // version 3.0
  hello.replace(12, 4, "NULL");
  // READY with one property, Socket-Type = DEALER (a 4-byte big-endian length before its value).
  std::string ready = "\x05READY\x0bSocket-Type";
  ready += std::string("\0\0\0\x06", 4) + "DEALER";
  hello += std::string("\x04") + static_cast<char>(ready.size()) + ready;
  auto send_all = [fd](const char* data, size_t n) {
    while (n > 0) {
      const ssize_t sent = send(fd, data, n, MSG_NOSIGNAL);
      if (sent <= 0) return false;
      data += sent;
      n -= static_cast<size_t>(sent);
    }
    return true;
  };
  const size_t frame_bytes = size_t{4} << 20;
  std::string head = "\x03";  // MORE | LONG, then the size, big-endian
  for (int shift = 56; shift >= 0; shift -= 8) head += static_cast<char>((frame_bytes >> shift) & 0xff);
  const std::string frame(frame_bytes, '\x5a');
  bool open = send_all(hello.data(), hello.size());
  for (int i = 0; open && i < frames; ++i) {
    open = send_all(head.data(), head.size()) && send_all(frame.data(), frame.size());
  }
  for (;;) pause();
}

void stop_flooder(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// How much the server's process grew while a flooder sent `frames` 4 MiB frames for `seconds`,
// with a key holder fetching (and timed) every 100 ms meanwhile.
struct FloodResult {
  size_t growth_bytes = 0;
  double slowest_fetch_s = 0;
  int fetches = 0;
};
FloodResult flood(const KvTransferServer& server, const std::optional<TransferKey>& client_key, int frames,
                  double seconds) {
  const size_t before = rss_bytes();
  const pid_t pid = start_flooder(std::atoi(server.endpoint().c_str() + server.endpoint().rfind(':') + 1), frames);
  FloodResult result;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    const auto start = Clock::now();
    const auto got = fetch_prompt_kv(server.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{5000},
                                     client_key ? &*client_key : nullptr);
    EXPECT_TRUE(got.has_value());
    result.slowest_fetch_s =
        std::max(result.slowest_fetch_s, std::chrono::duration<double>(Clock::now() - start).count());
    ++result.fetches;
    const size_t now = rss_bytes();
    result.growth_bytes = std::max(result.growth_bytes, now > before ? now - before : 0);
    std::this_thread::sleep_for(milliseconds{100});
  }
  stop_flooder(pid);
  return result;
}

TEST(KvTransferCurve, KeyHoldersFetchByteForByte) {
  const TransferKey key = fresh_key();
  KvTransferServer server("tcp://127.0.0.1:*", serving(), keyed(key));
  const auto got = fetch_prompt_kv(server.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{5000}, &key);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pages, sample_kv().pages);
}

TEST(KvTransferCurve, WithoutTheKeyNoFetchIsAnswered) {
  const TransferKey key = fresh_key();
  const TransferKey other = fresh_key();
  KvTransferServer server("tcp://127.0.0.1:*", serving(), keyed(key));
  for (const TransferKey* asker : {&other, static_cast<const TransferKey*>(nullptr)}) {
    try {
      fetch_prompt_kv(server.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{500}, asker);
      ADD_FAILURE() << "a fetch without the key was answered";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no answer within 500 ms"), std::string::npos) << e.what();
    }
  }
  // A keyed client does not talk to a server without the key (or with another) either.
  KvTransferServer plain("tcp://127.0.0.1:*", serving());
  EXPECT_THROW(fetch_prompt_kv(plain.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{500}, &key), Error);
  KvTransferServer impostor("tcp://127.0.0.1:*", serving(), keyed(other));
  EXPECT_THROW(fetch_prompt_kv(impostor.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{500}, &key), Error);
}

TEST(KvTransferCurve, AStrangersEndlessMessageCostsTheServerNothing) {
  const TransferKey key = fresh_key();
  KvTransferServer server("tcp://127.0.0.1:*", serving(), keyed(key));
  // 96 frames of 4 MiB: 384 MiB that a server without a key holds (below). A peer with another
  // key is refused in the same handshake (WithoutTheKeyNoFetchIsAnswered).
  const FloodResult r = flood(server, key, 96, 2.0);
  std::printf("keyed server, stranger's 384 MiB message: grew %zu KiB, slowest fetch %.3f s\n", r.growth_bytes >> 10,
              r.slowest_fetch_s);
  EXPECT_LT(r.growth_bytes, size_t{24} << 20);
  EXPECT_GE(r.fetches, 5);
  EXPECT_LT(r.slowest_fetch_s, 1.0);
}

TEST(KvTransferCurve, WithoutAKeyTheSameMessageIsHeldWholeWhichIsWhyTheKeyIsNeeded) {
  // The control: the attack is real, and only the key stops it (libzmq queues a multipart
  // message's frames until its last one arrives; no socket option bounds them). `lumen serve`
  // therefore listens without a key on loopback only.
  KvTransferServer server("tcp://127.0.0.1:*", serving());
  const FloodResult r = flood(server, std::nullopt, 48, 2.0);
  std::printf("server without a key, 192 MiB message: grew %zu MiB, slowest fetch %.3f s\n", r.growth_bytes >> 20,
              r.slowest_fetch_s);
  EXPECT_GT(r.growth_bytes, size_t{96} << 20);
  EXPECT_LT(r.slowest_fetch_s, 1.0);
}

TEST(KvTransferCurve, KeyFilesAreCheckedAndNeverReplaced) {
  const std::string path = ::testing::TempDir() + "/kv_key_" + std::to_string(getpid());
  std::remove(path.c_str());
  write_new_transfer_key(path);
  const TransferKey key = load_transfer_key(path);
  EXPECT_NE(fresh_key().secret, key.secret);  // each key is new
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THROW(write_new_transfer_key(path), Error);  // never replaced
  EXPECT_EQ(load_transfer_key(path).secret, key.secret);
  std::remove(path.c_str());
  EXPECT_THROW(parse_transfer_key("too short", "'k'"), Error);
  EXPECT_THROW(parse_transfer_key(std::string(40, '"'), "'k'"), Error);  // not Z85
  EXPECT_THROW(load_transfer_key(path), Error);                          // gone
}

TEST(KvTransferCurve, OnlyLoopbackAndLocalEndpointsAreLocal) {
  for (const char* local : {"tcp://127.0.0.1:5600", "tcp://127.1.2.3:1", "tcp://localhost:5600", "tcp://[::1]:5600",
                            "ipc:///tmp/kv", "inproc://kv"}) {
    EXPECT_TRUE(is_local_endpoint(local)) << local;
  }
  for (const char* open :
       {"tcp://0.0.0.0:5600", "tcp://*:5600", "tcp://10.0.0.5:5600", "tcp://eth0:5600", "tcp://127.0.0.1.evil:5600",
        "tcp://1270.0.0.1:5600", "tcp://127.0.0.1", "udp://127.0.0.1:1"}) {
    EXPECT_FALSE(is_local_endpoint(open)) << open;
  }
}

TEST(KvTransferCurve, FramesPastTheLongestPromptAreRefused) {
  KvTransferServerOptions options;
  options.max_fetch_tokens = 64;
  KvTransferServer server("tcp://127.0.0.1:*", serving(), options);
  KvFetch fetch = good_fetch();
  fetch.tokens.resize(65, 1);  // one token more than the server's longest prompt: never answered
  EXPECT_THROW(fetch_prompt_kv(server.endpoint(), fetch, kPageBytes, 8, milliseconds{300}), Error);
  EXPECT_TRUE(fetch_prompt_kv(server.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{5000}).has_value());
}

TEST(KvTransferPort, ConnectionsPastTheCapAreShutDown) {
  KvTransferServerOptions options;
  options.max_peers = 4;
  KvTransferServer server("tcp://127.0.0.1:*", serving(), options);
  const int port = std::atoi(server.endpoint().c_str() + server.endpoint().rfind(':') + 1);
  auto connect_raw = [port] {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    timeval wait{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    return fd;
  };
  // Whether the server closed `fd` (EOF or reset) rather than keeping it open (the greeting then
  // the wait for the peer's: libzmq sends its greeting's first bytes at once).
  auto closed_by_server = [](int fd) {
    char buffer[256];
    for (;;) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n > 0) continue;
      return n == 0 || errno == ECONNRESET;
    }
  };
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_raw());
  std::this_thread::sleep_for(milliseconds{200});
  const int fifth = connect_raw();
  EXPECT_TRUE(closed_by_server(fifth));
  close(fifth);
  for (int fd : idle) EXPECT_FALSE(closed_by_server(fd));  // within the cap: kept (for the handshake's time)
  for (int fd : idle) close(fd);
  std::this_thread::sleep_for(milliseconds{200});
  EXPECT_TRUE(fetch_prompt_kv(server.endpoint(), good_fetch(), kPageBytes, 8, milliseconds{5000}).has_value());
}

}  // namespace
}  // namespace lumen::kv_transfer
