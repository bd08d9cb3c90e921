// The packer of matmul_packed.h: plain byte moves, one group of 16 rows per pool task (each
// group's output, a few tens of KB, stays in L1/L2 while its 16 source rows stream past).
#include "backend/cpu/matmul_packed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "tensor/block_formats.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kParallelPackBytes = size_t{4} << 20;

// Where a packed format's bytes come from in a block of the file's layout.
template <typename Block, bool kHasMin, uint8_t kFlip, bool kHasHighBits = false>
struct Source {
  using BlockType = Block;
  static constexpr bool has_min = kHasMin;
  static constexpr uint32_t flip = kFlip * 0x01010101u;  // XORed into every code byte
  static constexpr size_t qs_words = sizeof(Block::qs) / 4;
  static constexpr bool has_high_bits = kHasHighBits;  // Q5_0's qh: one more chunk of 4 bytes a row
};

using Q4_0Source = Source<tensor::BlockQ4_0, false, 0>;
using Q4_1Source = Source<tensor::BlockQ4_1, true, 0>;
using Q5_0Source = Source<tensor::BlockQ5_0, false, 0, true>;
using Q8_0Source = Source<tensor::BlockQ8_0, false, 0x80>;

// One group: rows are read in order (one sequential stream each), their 4-byte pieces land in
// the group's buffer, which a few tens of KB keep in L1/L2. Fixed sizes let the compiler turn
// the moves into plain 4-byte loads and stores.
template <typename S>
void pack_group(const WeightMatrix& w, int64_t group, uint8_t* out) {
  using Block = typename S::BlockType;
  constexpr size_t kQsBytes = 4 * (S::qs_words + (S::has_high_bits ? 1 : 0)) * kPackRows;
  constexpr size_t kScaleBytes = (S::has_min ? 4 : 2) * kPackRows;
  const int64_t blocks = w.cols / tensor::kLegacyBlock;
  uint8_t* scales = out + kQsBytes * static_cast<size_t>(blocks);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = group * kPackRows + r;
    if (row >= w.rows) break;  // the group was zeroed: missing rows have scale 0
    const uint8_t* in = base + static_cast<size_t>(row) * w.row_bytes;
    uint8_t* qs = out + 4 * r;
    uint8_t* sc = scales + 2 * r;
    for (int64_t b = 0; b < blocks; ++b, in += sizeof(Block), qs += kQsBytes, sc += kScaleBytes) {
      for (size_t c = 0; c < S::qs_words; ++c) {
        uint32_t four;
        std::memcpy(&four, in + offsetof(Block, qs) + 4 * c, 4);
        four ^= S::flip;
        std::memcpy(qs + 64 * c, &four, 4);
      }
      if constexpr (S::has_high_bits) std::memcpy(qs + 64 * S::qs_words, in + offsetof(Block, qh), 4);
      std::memcpy(sc, in, 2);  // d
      if constexpr (S::has_min) std::memcpy(sc + 2 * kPackRows, in + 2, 2);  // m
    }
  }
}

using PackGroupFn = void (*)(const WeightMatrix& w, int64_t group, uint8_t* out);

PackGroupFn pack_group_for(tensor::DType type) {
  using tensor::DType;
  switch (type) {
    case DType::Q4_0: return pack_group<Q4_0Source>;
    case DType::Q4_1: return pack_group<Q4_1Source>;
    case DType::Q5_0: return pack_group<Q5_0Source>;
    case DType::Q8_0: return pack_group<Q8_0Source>;
    default: fail("no packed layout for {}", tensor::dtype_name(type));
  }
}

}  // namespace

PackedFormat packed_format(tensor::DType type) {
  using tensor::DType;
  switch (type) {
    case DType::Q4_0: return {16 * kPackRows, 2 * kPackRows};
    case DType::Q4_1: return {16 * kPackRows, 4 * kPackRows};
    case DType::Q5_0: return {20 * kPackRows, 2 * kPackRows};
    case DType::Q8_0: return {32 * kPackRows, 2 * kPackRows};
    default: return {};
  }
}

void PackedWeights::Free::operator()(uint8_t* p) const { std::free(p); }

PackedWeights::PackedWeights(const WeightMatrix& w, ThreadPool& pool)
    : type_(w.type), rows_(w.rows), cols_(w.cols), group_bytes_(0), data_(nullptr) {
  const PackedFormat fmt = packed_format(w.type);
  const auto row_bytes = tensor::row_bytes(w.type, w.cols);
  if (fmt.qs_bytes == 0 || w.rows <= 0 || !row_bytes || *row_bytes != w.row_bytes || w.data == nullptr) {
    fail("pack: cannot pack a {} weight matrix {} x {}", tensor::dtype_name(w.type), w.rows, w.cols);
  }
  const PackGroupFn pack = pack_group_for(w.type);
  const auto blocks = static_cast<size_t>(w.cols / tensor::kLegacyBlock);
  group_bytes_ = (blocks * (fmt.qs_bytes + fmt.scale_bytes) + kAlignment - 1) / kAlignment * kAlignment;
  // Large matrices go on 2 MiB pages where the kernel allows it (transparent huge pages on
  // request): decode streams them once per token, and with 4 KiB pages it would take a TLB
  // miss every 4 KiB.
  const bool huge = bytes() >= kHugePage;
  const size_t alignment = huge ? kHugePage : kAlignment;
  const size_t allocated = (bytes() + alignment - 1) / alignment * alignment;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(alignment, allocated)));
  if (!data_) fail("pack: out of memory for {} bytes", bytes());
#ifdef MADV_HUGEPAGE
  if (huge) madvise(data_.get(), allocated, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  const PackedWeights* self = this;
  const WeightMatrix* wp = &w;
  const auto pack_one = [self, wp, pack](int64_t g, unsigned) {
    uint8_t* out = const_cast<uint8_t*>(self->group(g));
    // Only a group with missing rows needs zeros (scale 0, codes 0); writing the others once is
    // enough, and skipping a pass over the whole copy matters at load time.
    if ((g + 1) * kPackRows > wp->rows) std::memset(out, 0, self->group_bytes_);
    pack(*wp, g, out);
  };
  // A small matrix packs in well under a millisecond: waking the pool for it would cost more
  // (SmolLM2 has over 200 such matrices, all packed before its first token).
  if (bytes() < kParallelPackBytes) {
    for (int64_t g = 0; g < groups(); ++g) pack_one(g, 0);
  } else {
    pool.parallel_for(groups(), pack_one);
  }
}

bool packing_pays_off(tensor::DType type) {
  return selected_isa() >= Isa::kAvx512 && detail::packed_kernels(type) != nullptr;
}

bool matmul_rounds_like_ggml_simd(tensor::DType type) {
  return !packing_pays_off(type);
}

}  // namespace lumen::backend::cpu
