// One process alone: rank 0 of 1, collectives that leave the data as it is, and no peer to
// send to.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>

#include "dist/collectives.h"
#include "dist/mpi_collectives.h"
#include "lumen/error.h"

namespace lumen::dist {
namespace {

TEST(SingleProcessCollectives, IsRankZeroOfOneAndLeavesDataAsItIs) {
  const auto c = single_process_collectives();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  std::array<float, 3> values = {1.5f, -2.0f, 1e8f};
  c->all_reduce_sum(values);
  EXPECT_EQ(values, (std::array<float, 3>{1.5f, -2.0f, 1e8f}));
  std::array<std::byte, 2> bytes = {std::byte{7}, std::byte{9}};
  c->broadcast(bytes, 0);
  EXPECT_EQ(bytes[1], std::byte{9});
  c->barrier();
  EXPECT_THROW(c->broadcast(bytes, 1), Error);
  EXPECT_THROW(c->send(bytes, 1), Error);
  EXPECT_THROW(c->receive(bytes, 1), Error);
  EXPECT_THROW(c->start_receive(bytes, 1), Error);
  EXPECT_THROW(c->start_send(bytes, 1), Error);
}

TEST(SingleProcessCollectives, AllToAllCopiesTheOwnSegmentAndRefusesOtherCounts) {
  const auto c = single_process_collectives();
  const std::array<std::byte, 3> sent = {std::byte{1}, std::byte{2}, std::byte{3}};
  std::array<std::byte, 3> received{};
  const std::array<size_t, 1> three = {3}, two = {2}, none = {0};
  c->all_to_all(sent, three, received, three);
  EXPECT_EQ(received, sent);
  c->all_to_all({}, none, {}, none);  // a layer whose tokens went nowhere: nothing to move
  EXPECT_THROW(c->all_to_all(sent, two, received, three), Error);
  const std::array<size_t, 2> split = {1, 2};
  EXPECT_THROW(c->all_to_all(sent, split, received, split), Error);
}

TEST(MpiCollectives, ABuildWithoutMpiSaysSo) {
  if (mpi_available()) GTEST_SKIP() << "this build has MPI (tests/unit/dist/mpi_collectives_test.cc runs under mpirun)";
  try {
    make_mpi_collectives(nullptr, nullptr);
    ADD_FAILURE() << "no error without MPI";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no MPI"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::dist
