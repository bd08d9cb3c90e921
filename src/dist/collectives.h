#pragma once
// The collective operations that spreading one model over several processes needs (issue 21:
// tensor parallelism all-reduces each block's partial outputs, pipeline parallelism passes
// activations from stage to stage, rank 0 broadcasts each step's plan), behind one small
// interface: MPI implements it for CPU processes on one or many machines (dist/mpi_collectives.h),
// a single process implements it trivially, and NCCL can implement the same for the CUDA
// backend. The engine talks to this, never to MPI.
//
// Determinism is part of the contract: all_reduce_sum adds the ranks' values in rank order, the
// same order on every rank, so every rank gets the same bits and a run gives the same result
// however the transport schedules its messages (MPI_Allreduce promises neither).
#include <cstddef>
#include <memory>
#include <span>

namespace lumen::dist {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data[i] becomes the sum over ranks r = 0, 1, .. of rank r's data[i], added in that order.
  // Every rank passes the same length.
  virtual void all_reduce_sum(std::span<float> data) = 0;
  // Every rank's data becomes root's. Every rank passes the same length.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Point to point, for pipeline stages: blocks until the matching call on the other rank.
  virtual void send(std::span<const std::byte> data, int to) = 0;
  virtual void receive(std::span<std::byte> data, int from) = 0;
  virtual void barrier() = 0;
};

// One process alone: rank 0 of 1, every operation leaves the data as it is.
std::unique_ptr<Collectives> single_process_collectives();

}  // namespace lumen::dist
