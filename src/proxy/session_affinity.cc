#include "proxy/session_affinity.h"

namespace lumen::proxy {

namespace {

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer: every input bit moves half the output
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::optional<uint64_t> session_key(std::string_view header_value) {
  if (header_value.empty() || header_value.size() > kMaxSessionIdBytes) return std::nullopt;
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a: stable across processes and builds
  for (const char c : header_value) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return mix64(hash);
}

uint64_t rendezvous_weight(uint64_t session, size_t instance) {
  return mix64(session ^ mix64(static_cast<uint64_t>(instance) + 0x9e3779b97f4a7c15ULL));
}

}  // namespace lumen::proxy
