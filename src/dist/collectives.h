#pragma once
// The collective operations that spreading one model over several processes needs (issue 21:
// tensor parallelism all-reduces each block's partial outputs, pipeline parallelism passes
// activations from stage to stage, expert parallelism exchanges routed rows all-to-all, rank 0
// broadcasts each step's plan), behind one small interface: MPI implements it for CPU processes
// on one or many machines (dist/mpi_collectives.h),
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

// A point-to-point message on its way (Collectives::start_receive): its buffer must stay alive
// and untouched until wait() returns. Going away without wait() cancels the receive.
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Blocks until the message is in the buffer; throws lumen::Error as receive does.
  virtual void wait() = 0;
};

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
  // receive without waiting: pipeline parallelism's rank 0 posts the receives of a step's last
  // stage before it sends the step's first micro-batch, so neither side can block the other.
  virtual std::unique_ptr<Transfer> start_receive(std::span<std::byte> data, int from) = 0;
  // send without waiting: ring attention sends its next K/V block while it attends the current
  // one. The buffer must stay alive and unchanged until wait() returns.
  virtual std::unique_ptr<Transfer> start_send(std::span<const std::byte> data, int to) = 0;
  virtual void barrier() = 0;
  // Each rank sends a segment to every rank and receives one from every rank (MPI_Alltoallv):
  // `send` holds this rank's segments for ranks 0, 1, .. end to end (send_bytes[q] of them for
  // rank q), `receive` gets rank 0's segment for this rank, then rank 1's, .. (receive_bytes[r]
  // from rank r). Both count lists have size() entries; what rank r sends to q must be what q
  // expects from r, which expert parallelism's ranks know without asking (each routes every
  // token). A segment may be empty. The own segment is copied.
  virtual void all_to_all(std::span<const std::byte> send, std::span<const size_t> send_bytes,
                          std::span<std::byte> receive, std::span<const size_t> receive_bytes) = 0;
  // The ranks that pass the same `color` form a group of their own (every rank calls this, in the
  // same order), ranked as they are here: pipeline parallelism's stages each all-reduce among
  // their own tensor-parallel ranks. Must not outlive this.
  virtual std::unique_ptr<Collectives> split(int color) = 0;
};

// One process alone: rank 0 of 1, every operation leaves the data as it is.
std::unique_ptr<Collectives> single_process_collectives();

}  // namespace lumen::dist
