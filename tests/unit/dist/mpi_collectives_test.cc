// The MPI collectives across real processes: run by ctest under `mpirun -np 2` and `-np 3`
// (tests/unit/dist/CMakeLists.txt). Every rank runs every test; a rank that fails makes mpirun
// fail. The sums are checked bit for bit against the rank-order sum each rank computes itself,
// with values whose float sum depends on the order (1e8 + 1 - 1e8 is 0 in that order, 1 in
// another), and against rank 0's bits.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dist/mpi_collectives.h"
#include "lumen/error.h"

namespace lumen::dist {
namespace {

Collectives* g_collectives = nullptr;

// Rank r's value at index i, known to every rank.
float contribution(int r, size_t i) {
  switch (i % 4) {
    case 0: return r == 0 ? 1e8f : (r == 1 ? 1.0f : -1e8f);  // the order matters with 3 ranks
    case 1: return static_cast<float>(r + 1) * 0.1f;
    case 2: return r % 2 == 0 ? 3.0e-8f : -1.5f;
    default: {
      std::mt19937 rng(static_cast<unsigned>(1000 * r + i));
      return std::uniform_real_distribution<float>(-10.0f, 10.0f)(rng);
    }
  }
}

TEST(MpiCollectives, RankAndSizeAreMpirunsOnes) {
  Collectives& c = *g_collectives;
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    EXPECT_EQ(c.size(), std::atoi(n));
  }
  if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK")) {
    EXPECT_EQ(c.rank(), std::atoi(r));
  }
  EXPECT_GE(c.size(), 2) << "run under mpirun -np 2 or more";
}

TEST(MpiCollectives, AllReduceSumAddsInRankOrderWithTheSameBitsOnEveryRank) {
  Collectives& c = *g_collectives;
  for (const size_t n : {size_t{1}, size_t{5}, size_t{4096}}) {
    std::vector<float> values(n), expected(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = contribution(c.rank(), i);
      float sum = contribution(0, i);
      for (int r = 1; r < c.size(); ++r) sum += contribution(r, i);
      expected[i] = sum;
    }
    c.all_reduce_sum(values);
    EXPECT_EQ(std::memcmp(values.data(), expected.data(), n * sizeof(float)), 0) << n << " values";
    // Rank 0's bits, compared on every rank.
    std::vector<float> from_zero = values;
    c.broadcast(std::as_writable_bytes(std::span<float>(from_zero)), 0);
    EXPECT_EQ(std::memcmp(values.data(), from_zero.data(), n * sizeof(float)), 0) << n << " values";
  }
  if (c.size() == 3) {
    std::vector<float> order = {contribution(c.rank(), 0)};
    c.all_reduce_sum(order);
    EXPECT_EQ(order[0], 0.0f);  // (1e8 + 1) - 1e8 in float, not 1e8 - 1e8 + 1
  }
}

TEST(MpiCollectives, BroadcastFromEveryRoot) {
  Collectives& c = *g_collectives;
  for (int root = 0; root < c.size(); ++root) {
    std::vector<std::byte> data(1000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(static_cast<unsigned char>(c.rank() == root ? i * 7 + root : 0));
    c.broadcast(data, root);
    for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], std::byte(static_cast<unsigned char>(i * 7 + root)));
  }
}

TEST(MpiCollectives, SendAndReceiveAroundARing) {
  Collectives& c = *g_collectives;
  const int next = (c.rank() + 1) % c.size(), previous = (c.rank() + c.size() - 1) % c.size();
  std::vector<std::byte> out(64, std::byte(static_cast<unsigned char>(c.rank() + 1))), in(64);
  // Even ranks send first and odd ones receive first, so no two ranks wait on each other.
  if (c.rank() % 2 == 0) {
    c.send(out, next);
    c.receive(in, previous);
  } else {
    c.receive(in, previous);
    c.send(out, next);
  }
  EXPECT_EQ(in[0], std::byte(static_cast<unsigned char>(previous + 1)));
  EXPECT_EQ(in[63], std::byte(static_cast<unsigned char>(previous + 1)));
  c.barrier();
}

TEST(MpiCollectives, AReceivePostedBeforeEveryRankSendsMeetsItsMessage) {
  Collectives& c = *g_collectives;
  const int next = (c.rank() + 1) % c.size(), previous = (c.rank() + c.size() - 1) % c.size();
  // Large enough that MPI_Send waits for its receiver (rendezvous): every rank sends at once, so
  // only receives posted beforehand let the ring complete.
  std::vector<std::byte> out(1 << 20, std::byte(static_cast<unsigned char>(c.rank() + 7))), in(1 << 20);
  std::unique_ptr<Transfer> incoming = c.start_receive(in, previous);
  c.send(out, next);
  incoming->wait();
  EXPECT_EQ(in.front(), std::byte(static_cast<unsigned char>(previous + 7)));
  EXPECT_EQ(in.back(), std::byte(static_cast<unsigned char>(previous + 7)));
  // Waiting twice is waiting once.
  incoming->wait();
  c.barrier();
}

TEST(MpiCollectives, SendsStartedOnEveryRankAtOnceMeetTheirReceives) {
  Collectives& c = *g_collectives;
  const int next = (c.rank() + 1) % c.size(), previous = (c.rank() + c.size() - 1) % c.size();
  // Ring attention's step: every rank starts its send and its receive, works, then waits for
  // both; rendezvous-sized messages, so a blocking send on every rank could not complete.
  std::vector<std::byte> out(1 << 20, std::byte(static_cast<unsigned char>(c.rank() + 11))), in(1 << 20);
  std::unique_ptr<Transfer> incoming = c.start_receive(in, previous);
  std::unique_ptr<Transfer> outgoing = c.start_send(out, next);
  outgoing->wait();
  incoming->wait();
  EXPECT_EQ(in.front(), std::byte(static_cast<unsigned char>(previous + 11)));
  EXPECT_EQ(in.back(), std::byte(static_cast<unsigned char>(previous + 11)));
  EXPECT_THROW(c.start_send(out, c.size()), Error);
  c.barrier();
}

TEST(MpiCollectives, AReceiveDroppedUnwaitedIsCancelledNotWaitedFor) {
  Collectives& c = *g_collectives;
  std::vector<std::byte> in(64);
  // Nobody sends: going away must not block (an engine step that failed midway drops its own).
  c.start_receive(in, (c.rank() + 1) % c.size()).reset();
  c.barrier();
  // A later message between the same ranks still meets its own receive.
  const int next = (c.rank() + 1) % c.size(), previous = (c.rank() + c.size() - 1) % c.size();
  std::vector<std::byte> out(64, std::byte{9});
  std::unique_ptr<Transfer> incoming = c.start_receive(in, previous);
  c.send(out, next);
  incoming->wait();
  EXPECT_EQ(in[0], std::byte{9});
  c.barrier();
}

TEST(MpiCollectives, SplitGroupsRanksByColorInTheirOrder) {
  Collectives& c = *g_collectives;
  std::unique_ptr<Collectives> part = c.split(c.rank() % 2);
  const int same_parity = (c.size() + 1 - c.rank() % 2) / 2;
  EXPECT_EQ(part->size(), same_parity);
  EXPECT_EQ(part->rank(), c.rank() / 2);
  // A sum over the group adds only its own ranks' values.
  std::vector<float> value = {static_cast<float>(c.rank() + 1)};
  part->all_reduce_sum(value);
  float expected = 0.0f;
  for (int r = c.rank() % 2; r < c.size(); r += 2) expected += static_cast<float>(r + 1);
  EXPECT_EQ(value[0], expected);
  // Its rank 0 is its first member: the broadcast carries the lowest rank of that parity.
  std::vector<std::byte> root(4, std::byte(static_cast<unsigned char>(c.rank())));
  part->broadcast(root, 0);
  EXPECT_EQ(root[0], std::byte(static_cast<unsigned char>(c.rank() % 2)));
  EXPECT_THROW(c.split(-1), Error);
  c.barrier();
}

// Rank r sends rank q (r + 2q) % 3 bytes (some segments empty, the own one included), each byte
// naming its sender, receiver and place; every rank checks what landed where.
std::byte exchanged(int from, int to, size_t i) { return static_cast<std::byte>(from * 64 + to * 8 + i); }
size_t exchanged_bytes(int from, int to) { return static_cast<size_t>((from + 2 * to) % 3); }

TEST(MpiCollectives, AllToAllDeliversEverySegmentIncludingEmptyOnes) {
  Collectives& c = *g_collectives;
  std::vector<size_t> send_bytes, receive_bytes;
  std::vector<std::byte> sent;
  for (int q = 0; q < c.size(); ++q) {
    send_bytes.push_back(exchanged_bytes(c.rank(), q));
    for (size_t i = 0; i < send_bytes.back(); ++i) sent.push_back(exchanged(c.rank(), q, i));
    receive_bytes.push_back(exchanged_bytes(q, c.rank()));
  }
  std::vector<std::byte> received(std::accumulate(receive_bytes.begin(), receive_bytes.end(), size_t{0}));
  c.all_to_all(sent, send_bytes, received, receive_bytes);
  size_t at = 0;
  for (int r = 0; r < c.size(); ++r) {
    for (size_t i = 0; i < receive_bytes[static_cast<size_t>(r)]; ++i) {
      EXPECT_EQ(received[at++], exchanged(r, c.rank(), i)) << "from rank " << r;
    }
  }
  // Counts that do not add up to the buffer are refused before MPI sees them.
  send_bytes[0] += 1;
  EXPECT_THROW(c.all_to_all(sent, send_bytes, received, receive_bytes), Error);
}

TEST(MpiCollectives, MistakesAreErrorsNotAborts) {
  Collectives& c = *g_collectives;
  std::vector<std::byte> buffer(16);
  EXPECT_THROW(c.send(buffer, c.rank()), Error);
  EXPECT_THROW(c.broadcast(buffer, c.size()), Error);
  EXPECT_THROW(c.receive(buffer, -1), Error);
  // A message shorter than the buffer it lands in.
  if (c.rank() == 0) {
    c.send(std::span<const std::byte>(buffer).first(8), 1);
  } else if (c.rank() == 1) {
    try {
      c.receive(buffer, 0);
      ADD_FAILURE() << "a short message was taken for a full one";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("8 bytes came for a buffer of 16"), std::string::npos) << e.what();
    }
  }
  c.barrier();
}

}  // namespace
}  // namespace lumen::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<lumen::dist::Collectives> collectives = lumen::dist::make_mpi_collectives(&argc, &argv);
  lumen::dist::g_collectives = collectives.get();
  // Only rank 0 prints the report; every rank's result counts.
  if (collectives->rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
