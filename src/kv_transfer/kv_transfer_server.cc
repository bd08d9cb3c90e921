#include "kv_transfer/kv_transfer_server.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kv_transfer/curve_auth.h"
#include "kv_transfer/peer_limit.h"
#include "kv_transfer/zmq_io.h"
#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

// How long the thread waits for a fetch before it looks at stopping_ again: stop()'s latency.
constexpr std::chrono::milliseconds kPollInterval{50};
// An answer still queued when the server stops may go out for this long; then it is dropped.
constexpr int kLingerMs = 100;
// Answers queued per peer before ROUTER drops more: an honest asker has one fetch in flight, and
// one answer can be hundreds of megabytes.
constexpr int kAnswersQueuedPerPeer = 4;
constexpr int kFetchesQueuedPerPeer = 16;

void answer_one(zmq::socket_t& socket, std::vector<zmq::message_t> message, const KvSource& source) {
  // ROUTER puts the peer's identity first; a REQ peer's body then follows an empty delimiter frame
  // (an empty frame can be nothing else: a fetch's header is never empty). The answer goes back
  // under the same envelope.
  const size_t envelope = message.size() > 1 && message[1].size() == 0 ? 2 : 1;
  const std::span<const zmq::message_t> body(message.begin() + static_cast<std::ptrdiff_t>(envelope), message.end());
  std::vector<Frame> answer = answer_fetch(frame_views(body), source);
  if (answer.empty()) return;
  std::vector<zmq::message_t> reply;
  reply.reserve(envelope + answer.size());
  for (size_t i = 0; i < envelope; ++i) reply.push_back(std::move(message[i]));
  message.clear();  // the fetch's tokens are no longer needed while the answer goes out
  for (Frame& frame : answer) reply.push_back(frame_message(std::move(frame)));
  // ROUTER drops an answer to a peer that has gone or has too many queued; that asker times out.
  send_message(socket, reply);
}

void serve(zmq::socket_t socket, std::unique_ptr<PeerLimit> peers, const KvSource& source,
           const std::atomic<bool>& stopping) noexcept {
  while (!stopping.load(std::memory_order_acquire)) {
    try {
      zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, 0, ZMQ_POLLIN, 0}};
      if (peers) items[1].socket = peers->events().handle();
      if (zmq::poll(items, peers ? 2 : 1, kPollInterval) <= 0) continue;
      if (peers && (items[1].revents & ZMQ_POLLIN)) peers->handle_events();
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> message = receive_message(socket);
      if (!message.empty()) answer_one(socket, std::move(message), source);
    } catch (...) {
      // Only the socket itself can fail here (out of memory in zmq): answering never throws. Pause
      // so a failure that persists does not spin the thread.
      std::this_thread::sleep_for(kPollInterval);
    }
  }
  if (peers) peers->stop(socket);
}

// A peer that has not finished its handshake by then is dropped (libzmq's default is 30 s).
constexpr int kHandshakeMs = 5000;

zmq::socket_t bind_router(const std::string& endpoint, const KvTransferServerOptions& options,
                          std::string& zap_domain) {
  try {
    zmq::socket_t socket(zmq_context(), zmq::socket_type::router);
    socket.set(zmq::sockopt::linger, kLingerMs);
    // A fetch's largest frame is its tokens; a frame announced larger drops the peer before zmq
    // allocates it (it allocates a frame's announced size as the frame begins).
    const uint64_t tokens = std::min(std::max<uint64_t>(options.max_fetch_tokens, 1), kMaxTokens);
    socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(std::max(kFetchHeaderBytes, tokens * sizeof(int32_t))));
    socket.set(zmq::sockopt::sndhwm, kAnswersQueuedPerPeer);
    socket.set(zmq::sockopt::rcvhwm, kFetchesQueuedPerPeer);
    socket.set(zmq::sockopt::handshake_ivl, kHandshakeMs);
    if (options.key) zap_domain = make_curve_server(socket, *options.key);
    socket.bind(endpoint);
    return socket;
  } catch (const zmq::error_t& e) {
    if (!zap_domain.empty()) forget_curve_server(zap_domain);
    fail("KV transfer server: cannot listen on '{}': {}", endpoint, e.what());
  }
}

}  // namespace

KvTransferServer::KvTransferServer(const std::string& endpoint, Source source, KvTransferServerOptions options)
    : source_(std::move(source)) {
  if (!source_) fail("KV transfer server on '{}': no source to answer from", endpoint);
  zmq::socket_t socket = bind_router(endpoint, options, zap_domain_);
  endpoint_ = socket.get(zmq::sockopt::last_endpoint);
  std::unique_ptr<PeerLimit> peers;
  if (options.max_peers > 0 && endpoint_.starts_with("tcp://")) {
    peers = std::make_unique<PeerLimit>(socket, options.max_peers);
  }
  // The sockets move to the thread and are used only there (the thread's start orders the handover).
  thread_ = std::thread(serve, std::move(socket), std::move(peers), std::cref(source_), std::cref(stopping_));
}

KvTransferServer::~KvTransferServer() { stop(); }

void KvTransferServer::stop() {
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  if (!zap_domain_.empty()) forget_curve_server(std::exchange(zap_domain_, std::string()));
}

}  // namespace lumen::kv_transfer
