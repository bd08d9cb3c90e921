#include "lumen/cache_salt.h"

#include "kv/block_hash.h"

namespace lumen {

uint64_t cache_salt_of(std::string_view text) {
  // FNV-1a folds the bytes in, the finalizer spreads them over every bit.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return kv::mix64(h) | 1;
}

uint64_t combine_cache_salts(uint64_t a, uint64_t b) { return kv::mix64(a ^ kv::mix64(b)) | 1; }

}  // namespace lumen
