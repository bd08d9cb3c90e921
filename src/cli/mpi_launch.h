#pragma once
// What an MPI launcher (OpenMPI's or MPICH's mpirun / mpiexec) tells each process it starts,
// read from the environment before MPI is initialized, and whether or not the command ever
// initializes it. `mpirun -np 2 lumen run ...` starts two whole `lumen` processes: without
// --tensor-parallel-size or --pipeline-parallel-size each runs the command alone (twice the
// output, every error twice), so rank 0 alone prints errors and warns about the missing flag.
#include <string>
#include <vector>

namespace lumen::cli {

struct LaunchRank {
  int rank = 0;
  int size = 1;  // 1: not started by a launcher (or a launch of one process)
};

// OMPI_COMM_WORLD_RANK / _SIZE (OpenMPI), else PMI_RANK / PMI_SIZE (MPICH, Intel MPI), else
// rank 0 of 1. Values that are not sensible numbers count as absent.
LaunchRank launch_rank_from_environment();

// The processes the command line spreads a model over: the product of --tensor-parallel-size
// (--tp), --pipeline-parallel-size (--pp) and --expert-parallel-size (--ep) as `args` give them,
// 1 without any.
long parallel_processes_asked(const std::vector<std::string>& args);

// For rank 0 of a launch of several processes whose command line spreads no model over them;
// empty otherwise.
std::string unspread_launch_warning(const LaunchRank& launch, const std::vector<std::string>& args);

}  // namespace lumen::cli
