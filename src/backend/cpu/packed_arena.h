#pragma once
// Memory for a model's packed weights (matmul_packed.h), handed out back to back from large
// chunks on 2 MiB pages.
//
// Why. Decode streams every weight byte once per token, so every page of weights costs a TLB
// miss per token; with 4 KiB pages that is one miss per 4 KiB streamed, and the hardware
// prefetchers stop at each 4 KiB boundary. A small model's matrices (SmolLM2's are 0.2-0.5 MB)
// are each too small for a 2 MiB page of their own, so alone they stayed on 4 KiB pages: put
// side by side in one chunk they share 2 MiB pages. Matrices are packed at their first matmul,
// so the chunk also holds them in the order a forward pass reads them: one long stream.
//
// Measured (SmolLM2-135M Q4_1, 2 threads, `lumen bench profile` decode at context 64,
// alternated): see BENCHMARKS.md, "Decode streams: packed weights on 2 MiB pages ...".
//
// The chunks are reserved large, but a page is backed only when first written, so the unused
// end of the last chunk costs address space, not memory. Not thread-safe: one backend packs
// from its own thread.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace lumen::backend::cpu {

// The 2 MiB page size the packed weights are allocated in (transparent huge pages).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class PackedArena {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kChunkBytes = size_t{64} << 20;

  PackedArena() = default;
  PackedArena(const PackedArena&) = delete;
  PackedArena& operator=(const PackedArena&) = delete;

  // `bytes` (> 0) of memory aligned to kAlignment, valid until the arena is destroyed. A
  // request larger than a chunk gets a chunk of its own. Throws lumen::Error when out of memory.
  uint8_t* allocate(size_t bytes);
  // Bytes handed out so far, and bytes of address space reserved for them.
  size_t used_bytes() const { return used_; }
  size_t reserved_bytes() const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  struct Chunk {
    std::unique_ptr<uint8_t[], Free> data;
    size_t size = 0;
    size_t used = 0;
  };
  std::vector<Chunk> chunks_;
  size_t used_ = 0;
};

// Memory on 2 MiB pages where the kernel allows it (transparent huge pages on request):
// `bytes` rounded up to a whole number of 2 MiB pages, aligned to one. Freed with std::free.
// Throws lumen::Error when out of memory.
uint8_t* allocate_on_huge_pages(size_t bytes);

}  // namespace lumen::backend::cpu
