#pragma once
// Collectives over MPI (OpenMPI from Debian: libopenmpi-dev, run with mpirun): one process per
// rank of MPI_COMM_WORLD, on one machine or many.
//
// MpiCollectives initializes MPI if nothing has (MPI_THREAD_SERIALIZED: any thread may call it,
// one at a time: a model is loaded on one thread and its engine may step on another) and finalizes it when it is destroyed, if it was the
// one that initialized it. MPI errors come back as lumen::Error naming the call (the
// communicator's handler is MPI_ERRORS_RETURN, not MPI's default abort).
//
// all_reduce_sum is an allgather of every rank's vector followed by a local sum in rank order:
// size times the bytes of a reduce-scatter ring, which for tensor parallelism's vectors (a
// batch's hidden states, a few hundred KB) on a few ranks costs latency rather than bandwidth,
// and buys the same bits on every rank and every run.
#include <memory>
#include <vector>

#include "dist/collectives.h"

namespace lumen::dist {

// Whether this build has MPI (LUMEN_MPI). Without it, make_mpi_collectives fails with a message.
bool mpi_available();

// The collectives of MPI_COMM_WORLD; MPI is initialized from argc/argv when nothing has. Its
// split() groups free their communicators when they go (before MPI is finalized).
std::unique_ptr<Collectives> make_mpi_collectives(int* argc, char*** argv);

}  // namespace lumen::dist
