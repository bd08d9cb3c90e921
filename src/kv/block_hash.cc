#include "kv/block_hash.h"

namespace lumen::kv {

BlockHash hash_block(BlockHash parent, uint64_t salt, std::span<const int32_t> tokens) {
  // The odd constant keeps parent == 0 from starting the chain at mix64(0) == 0.
  uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ salt);
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    const uint64_t word = static_cast<uint32_t>(tokens[i]) |
                          (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    h = mix64(h ^ word);
  }
  if (i < tokens.size()) h = mix64(h ^ static_cast<uint32_t>(tokens[i]));
  return mix64(h ^ static_cast<uint64_t>(tokens.size()));
}

}  // namespace lumen::kv
