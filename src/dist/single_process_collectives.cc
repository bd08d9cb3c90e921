#include <cstring>

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
  std::unique_ptr<Transfer> start_send(std::span<const std::byte>, int to) override {
    fail("send to rank {} in a single process", to);
  }
  void barrier() override {}
  // The only segment is this rank's own: copied from send to receive.
  void all_to_all(std::span<const std::byte> send, std::span<const size_t> send_bytes, std::span<std::byte> receive,
                  std::span<const size_t> receive_bytes) override {
    if (send_bytes.size() != 1 || receive_bytes.size() != 1 || send_bytes[0] != send.size() ||
        receive_bytes[0] != receive.size() || send.size() != receive.size()) {
      fail("all_to_all in a single process: {} bytes sent in {} segments, {} received in {}", send.size(),
           send_bytes.size(), receive.size(), receive_bytes.size());
    }
    if (!send.empty()) std::memcpy(receive.data(), send.data(), send.size());
  }
  std::unique_ptr<Collectives> split(int) override { return std::make_unique<SingleProcess>(); }
};

}  // namespace

std::unique_ptr<Collectives> single_process_collectives() { return std::make_unique<SingleProcess>(); }

}  // namespace lumen::dist
