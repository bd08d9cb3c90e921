// ModelOptions that spread a model over processes, checked before MPI is touched or the file is
// read: a bad count is a clear error in any process, under mpirun or not.
#include <gtest/gtest.h>

#include <string>

#include "lumen/error.h"
#include "lumen/model.h"

namespace lumen {
namespace {

std::string load_error(const ModelOptions& options) {
  try {
    Model::load("no-such-model.gguf", options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelParallelOptions, BadCountsAreRefusedBeforeAnythingStarts) {
  EXPECT_NE(load_error({.pipeline_parallel_size = 2, .pipeline_micro_batches = -1}).find(
                "pipeline_micro_batches must be 0 (four times the stages) or more (got -1)"),
            std::string::npos);
  EXPECT_NE(load_error({.pipeline_parallel_size = 0}).find("pipeline_parallel_size must be at least 1 (got 0)"),
            std::string::npos);
  EXPECT_NE(load_error({.tensor_parallel_size = -3}).find("tensor_parallel_size must be at least 1 (got -3)"),
            std::string::npos);
  EXPECT_NE(load_error({.context_parallel_size = 0}).find("context_parallel_size must be at least 1 (got 0)"),
            std::string::npos);
  EXPECT_NE(load_error({.tensor_parallel_size = 2, .context_parallel_size = 2})
                .find("context parallelism (--context-parallel-size 2) does not combine with tensor or pipeline"),
            std::string::npos);
}

}  // namespace
}  // namespace lumen
