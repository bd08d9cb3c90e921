#include "dist/mpi_collectives.h"

#include "util/error.h"

#ifdef LUMEN_HAVE_MPI
#include <mpi.h>

#include <climits>
#include <string>
#endif

namespace lumen::dist {

#ifdef LUMEN_HAVE_MPI

namespace {

// Throws lumen::Error for an MPI call that did not succeed, with MPI's own words.
void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail("{} failed: {}", call, std::string(text, static_cast<size_t>(length)));
}

// A message must fill the buffer it lands in: a shorter one means the ranks disagree on a step.
void check_count(const MPI_Status& status, size_t expected, int from) {
  int received = 0;
  MPI_Get_count(&status, MPI_BYTE, &received);
  if (static_cast<size_t>(received) != expected) {
    fail("receive from rank {}: {} bytes came for a buffer of {}", from, received, expected);
  }
}

// MPI counts are ints: longer buffers are refused rather than truncated.
int count_of(size_t n, const char* call) {
  if (n > static_cast<size_t>(INT_MAX)) fail("{}: {} elements is more than one MPI call takes", call, n);
  return static_cast<int>(n);
}

// A message MPI_Irecv or MPI_Isend started; waited for once. `from` < 0 marks a send, whose status
// carries no count to check.
class MpiTransfer final : public Transfer {
 public:
  MpiTransfer(MPI_Request request, size_t bytes, int from) : request_(request), bytes_(bytes), from_(from) {}
  // Not waited for (its owner gave up, say on an error): cancelled, so nothing writes into a
  // buffer that may be gone and nobody waits for a message that may never come.
  ~MpiTransfer() override {
    if (request_ == MPI_REQUEST_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Cancel(&request_);
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  MpiTransfer(const MpiTransfer&) = delete;
  MpiTransfer& operator=(const MpiTransfer&) = delete;

  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    MPI_Status status;
    check(MPI_Wait(&request_, &status), "MPI_Wait");
    if (from_ >= 0) check_count(status, bytes_, from_);
  }

 private:
  MPI_Request request_;
  size_t bytes_;
  int from_;
};

class MpiCollectives final : public Collectives {
 public:
  MpiCollectives(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      owns_mpi_ = true;
      if (provided < MPI_THREAD_SERIALIZED) fail("MPI_Init_thread: this MPI cannot be called from more than one thread");
    }
    adopt(MPI_COMM_WORLD);
  }
  ~MpiCollectives() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }
  MpiCollectives(const MpiCollectives&) = delete;
  MpiCollectives& operator=(const MpiCollectives&) = delete;

  std::unique_ptr<Collectives> split(int color) override {
    if (color < 0) fail("split: color {} (MPI takes colors of 0 and up)", color);
    MPI_Comm part = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, rank_, &part), "MPI_Comm_split");
    return std::unique_ptr<Collectives>(new MpiCollectives(part));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(std::span<float> data) override {
    if (size_ == 1 || data.empty()) return;
    const int n = count_of(data.size() * static_cast<size_t>(size_), "all_reduce_sum");
    gathered_.resize(static_cast<size_t>(n));
    check(MPI_Allgather(data.data(), count_of(data.size(), "MPI_Allgather"), MPI_FLOAT, gathered_.data(),
                        count_of(data.size(), "MPI_Allgather"), MPI_FLOAT, comm_),
          "MPI_Allgather");
    // Rank 0's values, then rank 1's added, and so on: the same order on every rank.
    for (size_t i = 0; i < data.size(); ++i) {
      float sum = gathered_[i];
      for (size_t r = 1; r < static_cast<size_t>(size_); ++r) sum += gathered_[r * data.size() + i];
      data[i] = sum;
    }
  }

  void broadcast(std::span<std::byte> data, int root) override {
    check_rank(root, "broadcast");
    if (size_ == 1 || data.empty()) return;
    check(MPI_Bcast(data.data(), count_of(data.size(), "MPI_Bcast"), MPI_BYTE, root, comm_), "MPI_Bcast");
  }

  void send(std::span<const std::byte> data, int to) override {
    check_peer(to, "send");
    check(MPI_Send(data.data(), count_of(data.size(), "MPI_Send"), MPI_BYTE, to, kTag, comm_), "MPI_Send");
  }

  void receive(std::span<std::byte> data, int from) override {
    check_peer(from, "receive");
    MPI_Status status;
    check(MPI_Recv(data.data(), count_of(data.size(), "MPI_Recv"), MPI_BYTE, from, kTag, comm_, &status),
          "MPI_Recv");
    check_count(status, data.size(), from);
  }

  std::unique_ptr<Transfer> start_receive(std::span<std::byte> data, int from) override {
    check_peer(from, "start_receive");
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Irecv(data.data(), count_of(data.size(), "MPI_Irecv"), MPI_BYTE, from, kTag, comm_, &request),
          "MPI_Irecv");
    return std::make_unique<MpiTransfer>(request, data.size(), from);
  }

  std::unique_ptr<Transfer> start_send(std::span<const std::byte> data, int to) override {
    check_peer(to, "start_send");
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(data.data(), count_of(data.size(), "MPI_Isend"), MPI_BYTE, to, kTag, comm_, &request), "MPI_Isend");
    return std::make_unique<MpiTransfer>(request, data.size(), -1);
  }

  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  void all_to_all(std::span<const std::byte> send, std::span<const size_t> send_bytes, std::span<std::byte> receive,
                  std::span<const size_t> receive_bytes) override {
    check_segments(send.size(), send_bytes, "all_to_all's send");
    check_segments(receive.size(), receive_bytes, "all_to_all's receive");
    // MPI takes int counts and offsets: a step's rows are far below 2 GiB, larger is refused.
    const auto ints = [](std::span<const size_t> bytes, std::vector<int>& counts, std::vector<int>& offsets) {
      counts.resize(bytes.size());
      offsets.resize(bytes.size());
      size_t offset = 0;
      for (size_t r = 0; r < bytes.size(); ++r) {
        counts[r] = count_of(bytes[r], "MPI_Alltoallv");
        offsets[r] = count_of(offset, "MPI_Alltoallv");
        offset += bytes[r];
      }
    };
    ints(send_bytes, send_counts_, send_offsets_);
    ints(receive_bytes, receive_counts_, receive_offsets_);
    check(MPI_Alltoallv(send.data(), send_counts_.data(), send_offsets_.data(), MPI_BYTE, receive.data(),
                        receive_counts_.data(), receive_offsets_.data(), MPI_BYTE, comm_),
          "MPI_Alltoallv");
  }

 private:
  explicit MpiCollectives(MPI_Comm comm) { adopt(comm); }

  void adopt(MPI_Comm comm) {
    comm_ = comm;
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }

  static constexpr int kTag = 0;

  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= size_) fail("{}: rank {} is not one of the {} ranks", what, r, size_);
  }
  // One count per rank, adding up to the buffer's length.
  void check_segments(size_t length, std::span<const size_t> bytes, const char* what) const {
    size_t total = 0;
    for (size_t b : bytes) total += b;
    if (bytes.size() != static_cast<size_t>(size_) || total != length) {
      fail("{}: {} segments of {} bytes in all for {} ranks and a buffer of {} bytes", what, bytes.size(), total, size_,
           length);
    }
  }
  void check_peer(int r, const char* what) const {
    check_rank(r, what);
    if (r == rank_) fail("{}: rank {} to itself", what, r);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  std::vector<float> gathered_;
  std::vector<int> send_counts_, send_offsets_, receive_counts_, receive_offsets_;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<Collectives> make_mpi_collectives(int* argc, char*** argv) {
  return std::make_unique<MpiCollectives>(argc, argv);
}

#else

bool mpi_available() { return false; }

std::unique_ptr<Collectives> make_mpi_collectives(int*, char***) {
  fail("this build of Lumen has no MPI (install libopenmpi-dev and rebuild)");
}

#endif

}  // namespace lumen::dist
