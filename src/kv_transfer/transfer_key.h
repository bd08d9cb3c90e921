#pragma once
// The KV-transfer port's deployment key: one CURVE secret key (ZeroMQ's CurveZMQ, Curve25519)
// that every prefill and decode instance of a deployment holds (`--kv-transfer-key FILE`). A
// prefill instance serves with it and admits only peers that prove they hold it too (a ZAP
// handler checks each connecting peer's long-term public key against the key's own); a decode
// instance presents it and checks that the server it reached holds it. A stranger without the
// file completes no handshake, so nothing it sends is ever queued.
//
// The file holds the secret key in Z85 (40 characters, `lumen kv-transfer-key FILE` writes one,
// mode 0600); the public key is derived from it. Keep it like a password.
#include <array>
#include <cstdint>
#include <string>

namespace lumen::kv_transfer {

struct TransferKey {
  std::array<uint8_t, 32> secret{};
  std::array<uint8_t, 32> public_key{};
};

// A fresh key from libsodium's random source (through libzmq); Z85 of the secret, 40 characters.
std::string generate_transfer_key_z85();
// Parses a key file's text (the Z85 secret, surrounding whitespace ignored). lumen::Error
// naming `origin` when it is not one.
TransferKey parse_transfer_key(const std::string& text, const std::string& origin);
// Reads and parses the file; lumen::Error naming it when it cannot.
TransferKey load_transfer_key(const std::string& path);
// Writes a fresh key to `path` with mode 0600; refuses to replace an existing file.
void write_new_transfer_key(const std::string& path);

// Whether only this machine can reach `endpoint`: tcp:// on a loopback address (127.x.y.z,
// [::1], localhost), or ipc:// / inproc://. Anything else is reachable from the network, and a
// prefill instance listens there only with a key.
bool is_local_endpoint(const std::string& endpoint);

}  // namespace lumen::kv_transfer
