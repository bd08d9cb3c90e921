#pragma once
// CURVE on the KV-transfer sockets (transfer_key.h): a server admits only peers holding the
// deployment key, a client talks only to a server holding it.
//
// libzmq's CURVE server alone admits any client that knows the server's public key; whom to
// admit is asked of a ZAP handler (ZeroMQ RFC 27) on inproc://zeromq.zap.01 of the socket's
// context. This process runs one for its KV-transfer context, started with the first server:
// each server registers a ZAP domain of its own and the one public key its peers must present
// (the deployment key's), and peers presenting any other are refused in the handshake, before
// any of their messages is accepted.
#include <string>

#include <zmq.hpp>

#include "kv_transfer/transfer_key.h"

namespace lumen::kv_transfer {

// Makes `socket` (not yet bound) a CURVE server with `key` that admits only peers whose
// long-term public key is the key's own. Returns the ZAP domain it registered, to pass to
// forget_curve_server when the socket closes.
std::string make_curve_server(zmq::socket_t& socket, const TransferKey& key);
void forget_curve_server(const std::string& domain);

// Makes `socket` (not yet connected) a CURVE client that presents `key` and accepts only a
// server holding it.
void make_curve_client(zmq::socket_t& socket, const TransferKey& key);

}  // namespace lumen::kv_transfer
