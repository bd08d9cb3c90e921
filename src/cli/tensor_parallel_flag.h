#pragma once
// `--tensor-parallel-size N` (vLLM's flag) for the commands that run a model through the engine
// (run, serve, bench latency, bench throughput): the model is spread over N processes that
// `mpirun -np N` starts with the same command line (ModelOptions::tensor_parallel_size). Rank 0
// does what the command does; the others follow its steps and print nothing.
#include <CLI/CLI.hpp>

namespace lumen::cli {

inline void add_tensor_parallel_option(CLI::App* cmd, int& size) {
  size = 1;
  cmd->add_option("--tensor-parallel-size,--tp", size,
                  "Spread the model over N processes started by `mpirun -np N` with this command line "
                  "(tensor parallelism: attention heads and FFN columns split by rank; CPU, MPI builds)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
}

}  // namespace lumen::cli
