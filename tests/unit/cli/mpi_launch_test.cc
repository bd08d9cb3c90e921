// What mpirun's environment and the command line say about a launch of several processes.
#include "cli/mpi_launch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace lumen::cli {
namespace {

// Sets environment variables for one test and removes them after it.
class ScopedEnvironment {
 public:
  ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const auto& [name, value] : values) {
      names_.push_back(name);
      setenv(name, value, 1);
    }
  }
  ~ScopedEnvironment() {
    for (const char* name : names_) unsetenv(name);
  }

 private:
  std::vector<const char*> names_;
};

TEST(MpiLaunch, NoLauncherIsRankZeroOfOne) {
  const LaunchRank launch = launch_rank_from_environment();
  EXPECT_EQ(launch.rank, 0);
  EXPECT_EQ(launch.size, 1);
}

TEST(MpiLaunch, ReadsOpenMpisAndMpichsVariables) {
  {
    ScopedEnvironment env{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
    EXPECT_EQ(launch_rank_from_environment().rank, 1);
    EXPECT_EQ(launch_rank_from_environment().size, 2);
  }
  ScopedEnvironment env{{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}};
  EXPECT_EQ(launch_rank_from_environment().rank, 3);
  EXPECT_EQ(launch_rank_from_environment().size, 4);
}

TEST(MpiLaunch, NonsenseValuesCountAsNoLauncher) {
  ScopedEnvironment env{
      {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMI_RANK", "x"}, {"PMI_SIZE", "2"}};
  EXPECT_EQ(launch_rank_from_environment().size, 1);
}

TEST(MpiLaunch, CountsTheProcessesTheFlagsAskFor) {
  EXPECT_EQ(parallel_processes_asked({"run", "-p", "hi"}), 1);
  EXPECT_EQ(parallel_processes_asked({"run", "--tp", "2"}), 2);
  EXPECT_EQ(parallel_processes_asked({"serve", "--tensor-parallel-size=2", "--pp", "3"}), 6);
  EXPECT_EQ(parallel_processes_asked({"run", "--pipeline-parallel-size", "2"}), 2);
  EXPECT_EQ(parallel_processes_asked({"run", "--tp", "1"}), 1);
  EXPECT_EQ(parallel_processes_asked({"run", "--ep", "2"}), 2);
  EXPECT_EQ(parallel_processes_asked({"serve", "--expert-parallel-size=4"}), 4);
  EXPECT_EQ(parallel_processes_asked({"run", "--cp", "2"}), 2);
  EXPECT_EQ(parallel_processes_asked({"serve", "--context-parallel-size=3"}), 3);
}

TEST(MpiLaunch, WarnsOnlyRankZeroOfAnUnspreadLaunch) {
  const std::vector<std::string> plain = {"run", "-p", "hi"};
  const std::string warning = unspread_launch_warning({0, 2}, plain);
  EXPECT_NE(warning.find("started as 2 processes"), std::string::npos) << warning;
  EXPECT_NE(warning.find("--tensor-parallel-size 2"), std::string::npos) << warning;
  EXPECT_EQ(unspread_launch_warning({1, 2}, plain), "");                             // rank 0 says it once
  EXPECT_EQ(unspread_launch_warning({0, 1}, plain), "");                             // no launch of several
  EXPECT_EQ(unspread_launch_warning({0, 2}, {"run", "--tp", "2", "-p", "hi"}), "");  // spread
  EXPECT_EQ(unspread_launch_warning({0, 2}, {"run", "--ep", "2", "-p", "hi"}), "");  // spread by experts
  EXPECT_EQ(unspread_launch_warning({0, 2}, {"run", "--cp", "2", "-p", "hi"}), "");  // prefill shared
  EXPECT_NE(warning.find("--context-parallel-size 2"), std::string::npos) << warning;
}

}  // namespace
}  // namespace lumen::cli
