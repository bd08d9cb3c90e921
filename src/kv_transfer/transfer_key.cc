#include "kv_transfer/transfer_key.h"

#include <fcntl.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace lumen::kv_transfer {

namespace {
constexpr size_t kZ85KeyChars = 40;

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}
}  // namespace

std::string generate_transfer_key_z85() {
  if (!zmq_has("curve")) fail("this libzmq was built without CURVE security");
  char public_z85[kZ85KeyChars + 1];
  char secret_z85[kZ85KeyChars + 1];
  if (zmq_curve_keypair(public_z85, secret_z85) != 0) fail("cannot make a CURVE key: {}", zmq_strerror(zmq_errno()));
  return std::string(secret_z85, kZ85KeyChars);
}

TransferKey parse_transfer_key(const std::string& text, const std::string& origin) {
  if (!zmq_has("curve")) fail("this libzmq was built without CURVE security");
  const std::string z85 = trimmed(text);
  TransferKey key;
  if (z85.size() != kZ85KeyChars || zmq_z85_decode(key.secret.data(), z85.c_str()) == nullptr) {
    fail("{} is not a KV-transfer key (40 Z85 characters; `lumen kv-transfer-key FILE` makes one)", origin);
  }
  char public_z85[kZ85KeyChars + 1];
  if (zmq_curve_public(public_z85, z85.c_str()) != 0 || zmq_z85_decode(key.public_key.data(), public_z85) == nullptr) {
    fail("{}: cannot derive the public key", origin);
  }
  return key;
}

TransferKey load_transfer_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read the KV-transfer key file '{}': {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > 4096) fail("'{}' is not a KV-transfer key (too long)", path);
  return parse_transfer_key(text.str(), "'" + path + "'");
}

void write_new_transfer_key(const std::string& path) {
  const std::string key = generate_transfer_key_z85() + "\n";
  // O_EXCL: never replace a deployment's key by accident; 0600 from the start, so the secret is
  // never readable by others, not even between open and chmod.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot create '{}': {}", path, std::strerror(errno));
  const ssize_t written = ::write(fd, key.data(), key.size());
  const bool closed = ::close(fd) == 0;
  if (written != static_cast<ssize_t>(key.size()) || !closed) {
    ::unlink(path.c_str());
    fail("cannot write '{}'", path);
  }
}

bool is_local_endpoint(const std::string& endpoint) {
  if (endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://")) return true;
  if (!endpoint.starts_with("tcp://")) return false;
  const std::string address = endpoint.substr(6);
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string host = address.substr(0, colon);
  if (host == "localhost" || host == "[::1]") return true;
  // 127.0.0.0/8, written as four decimal parts.
  unsigned parts[4];
  char tail = 0;
  return std::sscanf(host.c_str(), "%u.%u.%u.%u%c", &parts[0], &parts[1], &parts[2], &parts[3], &tail) == 4 &&
         parts[0] == 127 && parts[1] < 256 && parts[2] < 256 && parts[3] < 256;
}

}  // namespace lumen::kv_transfer
