#include "backend/cpu/packed_arena.h"

#include <algorithm>
#include <cstdlib>

#include <sys/mman.h>

#include "util/error.h"

namespace lumen::backend::cpu {

namespace {}

uint8_t* allocate_on_huge_pages(size_t bytes) {
  const size_t allocated = (std::max<size_t>(bytes, 1) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHugePageBytes, allocated));
  if (p == nullptr) fail("pack: out of memory for {} bytes", bytes);
#ifdef MADV_HUGEPAGE
  madvise(p, allocated, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return p;
}

void PackedArena::Free::operator()(uint8_t* p) const { std::free(p); }

uint8_t* PackedArena::allocate(size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < size) {
    // The rest of the current chunk stays unused (untouched pages cost no memory).
    const size_t chunk = std::max(kChunkBytes, (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
    chunks_.push_back(Chunk{std::unique_ptr<uint8_t[], Free>(allocate_on_huge_pages(chunk)), chunk, 0});
  }
  Chunk& c = chunks_.back();
  uint8_t* p = c.data.get() + c.used;
  c.used += size;
  used_ += size;
  return p;
}

size_t PackedArena::reserved_bytes() const {
  size_t total = 0;
  for (const Chunk& c : chunks_) total += c.size;
  return total;
}

}  // namespace lumen::backend::cpu
