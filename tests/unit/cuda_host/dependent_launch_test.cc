// What decides whether a kernel is queued as a programmatic dependent launch
// (dependent_launch.cuh): the streams a backend asked it for (dependent_launch_streams.h). The
// kernels' results with and without are compared on a GPU (CudaDependentLaunch).
#include <gtest/gtest.h>

#include "backend/cuda/dependent_launch_streams.h"

namespace lumen::backend::cuda {
namespace {

TEST(DependentLaunchStreams, OnlyStreamsSetOnAskAndClearingForgets) {
  int first = 0, second = 0;  // two addresses standing for two backends' streams
  EXPECT_FALSE(dependent_launch(&first));
  set_dependent_launch(&first, true);
  EXPECT_TRUE(dependent_launch(&first));
  EXPECT_FALSE(dependent_launch(&second));
  set_dependent_launch(&first, true);  // twice is once: one clear forgets it
  set_dependent_launch(&second, true);
  set_dependent_launch(&first, false);
  EXPECT_FALSE(dependent_launch(&first));
  EXPECT_TRUE(dependent_launch(&second));
  set_dependent_launch(&second, false);
  EXPECT_FALSE(dependent_launch(&second));
  set_dependent_launch(&second, false);  // clearing what is not set changes nothing
  EXPECT_FALSE(dependent_launch(&second));
}

TEST(DependentLaunchStreams, TheDefaultStreamNever) {
  set_dependent_launch(nullptr, true);
  EXPECT_FALSE(dependent_launch(nullptr));
  set_dependent_launch(nullptr, false);
}

}  // namespace
}  // namespace lumen::backend::cuda
