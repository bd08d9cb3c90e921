// ModelOptions that spread a model over processes, checked before MPI is touched or the file is
// read: a bad count is a clear error in any process, under mpirun or not.
#include <gtest/gtest.h>

#include <string>

#include "engine/model_parallel.h"
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
  // Context parallelism holds the whole model in each process: no split over CPU and GPU.
  EXPECT_NE(load_error({.device = "cuda", .context_parallel_size = 2, .n_gpu_layers = 4})
                .find("--n-gpu-layers splits a model in one process; it does not combine with context parallelism"),
            std::string::npos);
}

// Expert and context parallelism each take every process: the group refuses both at once, before
// MPI starts (Model::load reads an expert-parallel model's hyperparameters first).
TEST(ModelParallelOptions, ContextParallelismRefusesExpertParallelism) {
  try {
    engine::join_model_parallel_group(1, 1, 2, 2);
    FAIL() << "expert and context parallelism together were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "context parallelism (--context-parallel-size 2) does not combine with expert parallelism"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lumen
