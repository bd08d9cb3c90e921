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

// MPI counts are ints: longer buffers are refused rather than truncated.
int count_of(size_t n, const char* call) {
  if (n > static_cast<size_t>(INT_MAX)) fail("{}: {} elements is more than one MPI call takes", call, n);
  return static_cast<int>(n);
}

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
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  }
  ~MpiCollectives() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }
  MpiCollectives(const MpiCollectives&) = delete;
  MpiCollectives& operator=(const MpiCollectives&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(std::span<float> data) override {
    if (size_ == 1 || data.empty()) return;
    const int n = count_of(data.size() * static_cast<size_t>(size_), "all_reduce_sum");
    gathered_.resize(static_cast<size_t>(n));
    check(MPI_Allgather(data.data(), count_of(data.size(), "MPI_Allgather"), MPI_FLOAT, gathered_.data(),
                        count_of(data.size(), "MPI_Allgather"), MPI_FLOAT, MPI_COMM_WORLD),
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
    check(MPI_Bcast(data.data(), count_of(data.size(), "MPI_Bcast"), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }

  void send(std::span<const std::byte> data, int to) override {
    check_peer(to, "send");
    check(MPI_Send(data.data(), count_of(data.size(), "MPI_Send"), MPI_BYTE, to, kTag, MPI_COMM_WORLD), "MPI_Send");
  }

  void receive(std::span<std::byte> data, int from) override {
    check_peer(from, "receive");
    MPI_Status status;
    check(MPI_Recv(data.data(), count_of(data.size(), "MPI_Recv"), MPI_BYTE, from, kTag, MPI_COMM_WORLD, &status),
          "MPI_Recv");
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    if (static_cast<size_t>(received) != data.size()) {
      fail("receive from rank {}: {} bytes came for a buffer of {}", from, received, data.size());
    }
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  static constexpr int kTag = 0;

  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= size_) fail("{}: rank {} is not one of the {} ranks", what, r, size_);
  }
  void check_peer(int r, const char* what) const {
    check_rank(r, what);
    if (r == rank_) fail("{}: rank {} to itself", what, r);
  }

  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  std::vector<float> gathered_;
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
