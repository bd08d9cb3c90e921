#include "dist/collectives.h"
#include "util/error.h"

namespace lumen::dist {

namespace {

// Rank 0 of 1: a sum over one rank is its own value, a broadcast from itself changes nothing,
// and there is no other rank to send to.
class SingleProcess final : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(std::span<float>) override {}
  void broadcast(std::span<std::byte>, int root) override {
    if (root != 0) fail("broadcast from rank {} in a single process", root);
  }
  void send(std::span<const std::byte>, int to) override { fail("send to rank {} in a single process", to); }
  void receive(std::span<std::byte>, int from) override { fail("receive from rank {} in a single process", from); }
  std::unique_ptr<Transfer> start_receive(std::span<std::byte>, int from) override {
    fail("receive from rank {} in a single process", from);
  }
  void barrier() override {}
  std::unique_ptr<Collectives> split(int) override { return std::make_unique<SingleProcess>(); }
};

}  // namespace

std::unique_ptr<Collectives> single_process_collectives() { return std::make_unique<SingleProcess>(); }

}  // namespace lumen::dist
