#include "kv_transfer/curve_auth.h"

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "kv_transfer/zmq_io.h"
#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";

// The domains of this process's CURVE servers and the public key each admits. Never destroyed,
// like the context: the handler's thread runs until the process ends.
struct ZapRegistry {
  std::mutex mutex;
  std::map<std::string, std::array<uint8_t, 32>> admitted;
  uint64_t next_domain = 0;

  bool admits(const std::string& domain, const zmq::message_t& credential) {
    std::lock_guard lock(mutex);
    auto it = admitted.find(domain);
    return it != admitted.end() && credential.size() == it->second.size() &&
           std::memcmp(credential.data(), it->second.data(), it->second.size()) == 0;
  }
};

std::string text_of(const zmq::message_t& part) { return std::string(part.data<char>(), part.size()); }

// Answers ZAP requests (RFC 27): version, request id, domain, address, identity, mechanism,
// then the mechanism's credentials (CURVE: the client's 32-byte long-term public key).
void answer_zap(zmq::socket_t& handler, ZapRegistry& registry) {
  for (;;) {
    std::vector<zmq::message_t> request = receive_message(handler);
    if (request.empty()) {
      wait_readable(handler, std::chrono::milliseconds{1000});
      continue;
    }
    const bool well_formed = request.size() >= 7 && text_of(request[0]) == "1.0";
    const bool admitted =
        well_formed && text_of(request[5]) == "CURVE" && registry.admits(text_of(request[2]), request[6]);
    std::vector<zmq::message_t> reply;
    reply.emplace_back(std::string_view("1.0"));
    reply.push_back(request.size() >= 2 ? std::move(request[1]) : zmq::message_t());
    reply.emplace_back(std::string_view(admitted ? "200" : "400"));
    reply.emplace_back(std::string_view(admitted ? "OK" : "not this deployment's KV-transfer key"));
    reply.emplace_back();  // user id
    reply.emplace_back();  // metadata
    send_message(handler, reply);
  }
}

ZapRegistry& zap_registry() {
  static ZapRegistry* const registry = [] {
    auto* r = new ZapRegistry;
    // Bound here, before any CURVE server exists, so no handshake ever finds no handler (libzmq
    // would then admit every client).
    zmq::socket_t handler(zmq_context(), zmq::socket_type::rep);
    handler.bind(kZapEndpoint);
    std::thread([handler = std::move(handler), r]() mutable noexcept {
      try {
        answer_zap(handler, *r);
      } catch (...) {
        // Only the context ending stops it (at exit). Handshakes then find no handler.
      }
    }).detach();
    return r;
  }();
  return *registry;
}

}  // namespace

std::string make_curve_server(zmq::socket_t& socket, const TransferKey& key) {
  ZapRegistry& registry = zap_registry();
  std::string domain;
  {
    std::lock_guard lock(registry.mutex);
    domain = "lumen-kv-transfer-" + std::to_string(registry.next_domain++);
    registry.admitted[domain] = key.public_key;
  }
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, zmq::const_buffer(key.secret.data(), key.secret.size()));
  socket.set(zmq::sockopt::zap_domain, domain);
  return domain;
}

void forget_curve_server(const std::string& domain) {
  ZapRegistry& registry = zap_registry();
  std::lock_guard lock(registry.mutex);
  registry.admitted.erase(domain);
}

void make_curve_client(zmq::socket_t& socket, const TransferKey& key) {
  socket.set(zmq::sockopt::curve_serverkey, zmq::const_buffer(key.public_key.data(), key.public_key.size()));
  socket.set(zmq::sockopt::curve_publickey, zmq::const_buffer(key.public_key.data(), key.public_key.size()));
  socket.set(zmq::sockopt::curve_secretkey, zmq::const_buffer(key.secret.data(), key.secret.size()));
}

}  // namespace lumen::kv_transfer
