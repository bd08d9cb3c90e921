#pragma once
// The prefill side of disaggregated prefill/decode: answers decode instances' fetches for the K/V
// that this instance's engine computed and keeps (wire format: kv_transfer/wire_format.h).
//
// One ROUTER socket, bound at construction and served by the server's own thread, one fetch at a
// time: answering is a lookup and a copy (the source), and the pages leave through zmq's I/O
// threads without further copies. A fetch gets exactly one answer: Found, NotFound, or Error with
// a message (a malformed fetch, a source that threw, a format mismatch); nothing a peer sends ends
// the thread. Peers speak through a DEALER socket (as fetch_prompt_kv does) or a REQ socket.
//
// Trust: with a deployment key (options.key, transfer_key.h) only peers holding it complete a
// handshake (CURVE), so a stranger's frames are never queued. The server bounds every frame it
// accepts (ZMQ_MAXMSGSIZE: the largest fetch's tokens frame) and how many messages it queues per
// peer, but libzmq holds a multipart message until its last frame arrives, so a peer that holds
// the key and sends frames without end still costs memory: the key is what bounds that. Without
// a key, listen on loopback only (`lumen serve` refuses more).
#include <atomic>
#include <optional>
#include <string>
#include <thread>

#include "kv_transfer/fetch_answer.h"
#include "kv_transfer/transfer_key.h"
#include "kv_transfer/wire_format.h"

namespace lumen::kv_transfer {

struct KvTransferServerOptions {
  std::optional<TransferKey> key;  // CURVE with this deployment key; none: no authentication
  // The longest prompt a fetch may carry (the engine's context): every frame a peer sends is
  // refused past its tokens frame, so even a handshake's frames cost at most that.
  uint64_t max_fetch_tokens = kMaxTokens;
  // Connections held at once (tcp:// only; peer_limit.h); 0: no cap. With the frame cap this
  // bounds what peers that never finish a message can make the server hold before any handshake:
  // max_peers x (max_fetch_tokens x 4 bytes).
  size_t max_peers = 256;
};

class KvTransferServer {
 public:
  // Called on the server's thread, one fetch at a time: nullopt when nothing is held for the fetch;
  // a lumen::Error it throws reaches the asker as an Error answer with its message. The server
  // refuses an answer in another format than fetch.format only after the source gave it: a source
  // that hands its K/V out once (PromptKvExchange::take_prompt_kv) checks the format before it takes.
  using Source = KvSource;

  // Binds `endpoint` ("tcp://10.0.0.5:5600"; "tcp://127.0.0.1:*" for any free port) and starts
  // answering. Throws lumen::Error naming the endpoint when it cannot bind (in use, malformed).
  KvTransferServer(const std::string& endpoint, Source source, KvTransferServerOptions options = {});
  ~KvTransferServer();  // stop()
  KvTransferServer(const KvTransferServer&) = delete;
  KvTransferServer& operator=(const KvTransferServer&) = delete;

  // The bound endpoint as peers connect to it, with the real port when `endpoint` asked for any.
  const std::string& endpoint() const { return endpoint_; }
  // Stops answering and joins the thread, within about 50 ms (its poll). A fetch not yet
  // answered then gets no answer (its asker times out). Idempotent; not to be called from two
  // threads at once.
  void stop();

 private:
  Source source_;
  std::string endpoint_;
  std::string zap_domain_;  // with a key: the domain its admitted peers are checked under
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace lumen::kv_transfer
