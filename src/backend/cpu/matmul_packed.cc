// The packer of matmul_packed.h: plain byte moves, one group of 16 rows per pool task (each
// group's output, a few tens of KB, stays in L1/L2 while its 16 source rows stream past).
#include "backend/cpu/matmul_packed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kquant_decode.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/packed_arena.h"
#include "tensor/block_formats.h"
#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

using detail::decode_q6_k;
using detail::DecodedSuper;
using detail::scale_min_pairs;

constexpr size_t kAlignment = 64;
constexpr size_t kParallelPackBytes = size_t{4} << 20;

// Where a packed format's bytes come from in a block of the file's layout. The scale (and min)
// is the block's first kScaleWidth bytes (and the next as many): an f16 d, or MXFP4's exponent.
template <typename Block, bool kHasMin, uint8_t kFlip, bool kHasHighBits = false, size_t kScaleWidth = 2>
struct Source {
  using BlockType = Block;
  static constexpr bool has_min = kHasMin;
  static constexpr uint32_t flip = kFlip * 0x01010101u;  // XORed into every code byte
  static constexpr size_t qs_words = sizeof(Block::qs) / 4;
  static constexpr bool has_high_bits = kHasHighBits;  // Q5_0's qh: one more chunk of 4 bytes a row
  static constexpr size_t scale_width = kScaleWidth;
};

using Q4_0Source = Source<tensor::BlockQ4_0, false, 0>;
using Q4_1Source = Source<tensor::BlockQ4_1, true, 0>;
using Q5_0Source = Source<tensor::BlockQ5_0, false, 0, true>;
using Q8_0Source = Source<tensor::BlockQ8_0, false, 0x80>;
using IQ4_NLSource = Source<tensor::BlockIQ4_NL, false, 0>;  // Q4_0's layout: the kernel looks the levels up
using MXFP4Source = Source<tensor::BlockMXFP4, false, 0, false, 1>;  // IQ4_NL's, with a 1-byte scale
static_assert(offsetof(tensor::BlockMXFP4, e) == 0);

// One group: rows are read in order (one sequential stream each), their 4-byte pieces land in
// the group's buffer, which a few tens of KB keep in L1/L2. Fixed sizes let the compiler turn
// the moves into plain 4-byte loads and stores.
template <typename S>
void pack_group(const WeightMatrix& w, int64_t group, uint8_t* out) {
  using Block = typename S::BlockType;
  constexpr size_t kQsBytes = 4 * (S::qs_words + (S::has_high_bits ? 1 : 0)) * kPackRows;
  constexpr size_t kScaleBytes = (S::has_min ? 2 : 1) * S::scale_width * kPackRows;
  const int64_t blocks = w.cols / tensor::kLegacyBlock;
  uint8_t* scales = out + kQsBytes * static_cast<size_t>(blocks);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = group * kPackRows + r;
    if (row >= w.rows) break;  // the group was zeroed: missing rows have scale 0
    const uint8_t* in = base + static_cast<size_t>(row) * w.row_bytes;
    uint8_t* qs = out + 4 * r;
    uint8_t* sc = scales + S::scale_width * r;
    for (int64_t b = 0; b < blocks; ++b, in += sizeof(Block), qs += kQsBytes, sc += kScaleBytes) {
      for (size_t c = 0; c < S::qs_words; ++c) {
        uint32_t four;
        std::memcpy(&four, in + offsetof(Block, qs) + 4 * c, 4);
        four ^= S::flip;
        std::memcpy(qs + 64 * c, &four, 4);
      }
      if constexpr (S::has_high_bits) std::memcpy(qs + 64 * S::qs_words, in + offsetof(Block, qh), 4);
      std::memcpy(sc, in, S::scale_width);                                   // d (MXFP4: e)
      if constexpr (S::has_min) std::memcpy(sc + 2 * kPackRows, in + 2, 2);  // m
    }
  }
}

// ---- K-quants: one super-block of 256 elements per block (matmul_packed.h) ----

constexpr size_t kQ4KQsBytes = 128 * kPackRows;
constexpr size_t kQ5KQsBytes = 160 * kPackRows;                 // Q4_K's, then the fifth bits
constexpr size_t kQ4KScaleBytes = (8 + 8 + 2 + 2) * kPackRows;  // scales, mins, d, dmin (Q5_K too)
constexpr size_t kQ6KQsBytes = 192 * kPackRows;
constexpr size_t kQ6KScaleBytes = (16 + 2) * kPackRows;  // scales, d

// Q4_K (and Q5_K): the codes move as they are (4-byte pieces of qs, then of Q5_K's qh); the
// 6-bit scales and mins are unpacked to one byte each, mins in pairs of sub-blocks (2i, 2i + 1)
// so a 16-bit widening gives the pairs vpdpwssd multiplies.
template <typename Block, size_t kQsBytes>
void pack_group_q4_k(const WeightMatrix& w, int64_t group, uint8_t* out) {
  const int64_t supers = w.cols / tensor::kSuperBlock;
  uint8_t* scales = out + kQsBytes * static_cast<size_t>(supers);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = group * kPackRows + r;
    if (row >= w.rows) break;
    const uint8_t* in = base + static_cast<size_t>(row) * w.row_bytes;
    for (int64_t s = 0; s < supers; ++s, in += sizeof(Block)) {
      Block block;
      std::memcpy(&block, in, sizeof(block));
      uint8_t* qs = out + kQsBytes * static_cast<size_t>(s) + 4 * r;
      for (int k = 0; k < 32; ++k) std::memcpy(qs + 64 * k, block.qs + 4 * k, 4);
      if constexpr (std::is_same_v<Block, tensor::BlockQ5_K>) {
        for (int k = 0; k < 8; ++k) std::memcpy(qs + kQ4KQsBytes + 64 * k, block.qh + 4 * k, 4);
      }
      int16_t sc[16], mn[16];
      scale_min_pairs(block.scales, sc, mn);  // per 16 elements: each sub-block's twice
      uint8_t* sb = scales + kQ4KScaleBytes * static_cast<size_t>(s);
      for (int j = 0; j < 8; ++j) {
        sb[kPackRows * j + r] = static_cast<uint8_t>(sc[2 * j]);
        sb[8 * kPackRows + 2 * kPackRows * (j / 2) + 2 * r + j % 2] = static_cast<uint8_t>(mn[2 * j]);
      }
      std::memcpy(sb + 16 * kPackRows + 2 * r, &block.d, 2);
      std::memcpy(sb + 18 * kPackRows + 2 * r, &block.dmin, 2);
    }
  }
}

// Q6_K: per 32 elements the unsigned 6-bit codes (q + 32) split into Q4_0's nibble chunks and
// two chunks of top bits: in chunk h, bits 2v and 2v + 1 of lane byte i are the top bits of the
// element weight vector 4h + v meets at byte i (the kernels' vector order: even vectors hold
// elements 4 (k / 2) + i, odd ones 16 + 4 (k / 2) + i).
void pack_group_q6_k(const WeightMatrix& w, int64_t group, uint8_t* out) {
  const int64_t supers = w.cols / tensor::kSuperBlock;
  uint8_t* scales = out + kQ6KQsBytes * static_cast<size_t>(supers);
  const auto* base = static_cast<const uint8_t*>(w.data);
  DecodedSuper decoded;
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = group * kPackRows + r;
    if (row >= w.rows) break;
    const uint8_t* in = base + static_cast<size_t>(row) * w.row_bytes;
    for (int64_t s = 0; s < supers; ++s) {
      decode_q6_k(in, s, decoded);
      uint8_t* qs = out + kQ6KQsBytes * static_cast<size_t>(s) + 4 * r;
      for (int b = 0; b < 8; ++b, qs += 384) {
        const uint8_t* codes = decoded.codes + 32 * b;
        for (int c = 0; c < 4; ++c) {
          for (int i = 0; i < 4; ++i) {
            qs[64 * c + i] = static_cast<uint8_t>((codes[4 * c + i] & 15) | (codes[16 + 4 * c + i] & 15) << 4);
          }
        }
        for (int h = 0; h < 2; ++h) {
          for (int i = 0; i < 4; ++i) {
            uint8_t top = 0;
            for (int v = 0; v < 4; ++v) {
              const int k = 4 * h + v;
              const int element = (k % 2 == 0 ? 0 : 16) + 4 * (k / 2) + i;
              top = static_cast<uint8_t>(top | (codes[element] >> 4) << (2 * v));
            }
            qs[256 + 64 * h + i] = top;
          }
        }
      }
      uint8_t* sb = scales + kQ6KScaleBytes * static_cast<size_t>(s);
      for (int j = 0; j < 16; ++j) sb[kPackRows * j + r] = static_cast<uint8_t>(static_cast<int8_t>(decoded.sc[j]));
      uint16_t d;
      std::memcpy(&d, in + sizeof(tensor::BlockQ6_K) * static_cast<size_t>(s) + offsetof(tensor::BlockQ6_K, d), 2);
      std::memcpy(sb + 16 * kPackRows + 2 * r, &d, 2);
    }
  }
}

// IQ4_XS: per sub-block of 32, Q4_0's chunks of 4-byte pieces of its 16 code bytes; the 6-bit
// scales unpacked to int8 (ls - 32), then d (matmul_packed_kquant_avx512.cc reads them).
constexpr size_t kIQ4XSQsBytes = 128 * kPackRows;
constexpr size_t kIQ4XSScaleBytes = (8 + 2) * kPackRows;

void pack_group_iq4_xs(const WeightMatrix& w, int64_t group, uint8_t* out) {
  const int64_t supers = w.cols / tensor::kSuperBlock;
  uint8_t* scales = out + kIQ4XSQsBytes * static_cast<size_t>(supers);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int r = 0; r < kPackRows; ++r) {
    const int64_t row = group * kPackRows + r;
    if (row >= w.rows) break;
    const uint8_t* in = base + static_cast<size_t>(row) * w.row_bytes;
    for (int64_t s = 0; s < supers; ++s, in += sizeof(tensor::BlockIQ4_XS)) {
      tensor::BlockIQ4_XS block;
      std::memcpy(&block, in, sizeof(block));
      uint8_t* qs = out + kIQ4XSQsBytes * static_cast<size_t>(s) + 4 * r;
      uint8_t* sb = scales + kIQ4XSScaleBytes * static_cast<size_t>(s);
      for (int j = 0; j < 8; ++j) {
        for (int c = 0; c < 4; ++c) std::memcpy(qs + 256 * j + 64 * c, block.qs + 16 * j + 4 * c, 4);
        const int ls = ((block.scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((block.scales_h >> (2 * j)) & 3) << 4);
        sb[kPackRows * j + r] = static_cast<uint8_t>(static_cast<int8_t>(ls - 32));
      }
      std::memcpy(sb + 8 * kPackRows + 2 * r, &block.d, 2);
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
    case DType::IQ4_NL: return pack_group<IQ4_NLSource>;
    case DType::MXFP4: return pack_group<MXFP4Source>;
    case DType::IQ4_XS: return pack_group_iq4_xs;
    case DType::Q4_K: return pack_group_q4_k<tensor::BlockQ4_K, kQ4KQsBytes>;
    case DType::Q5_K: return pack_group_q4_k<tensor::BlockQ5_K, kQ5KQsBytes>;
    case DType::Q6_K: return pack_group_q6_k;
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
    case DType::IQ4_NL: return {16 * kPackRows, 2 * kPackRows};
    case DType::MXFP4: return {16 * kPackRows, 1 * kPackRows};
    case DType::IQ4_XS: return {kIQ4XSQsBytes, kIQ4XSScaleBytes, tensor::kSuperBlock};
    case DType::Q4_K: return {kQ4KQsBytes, kQ4KScaleBytes, tensor::kSuperBlock};
    case DType::Q5_K: return {kQ5KQsBytes, kQ4KScaleBytes, tensor::kSuperBlock};
    case DType::Q6_K: return {kQ6KQsBytes, kQ6KScaleBytes, tensor::kSuperBlock};
    default: return {};
  }
}

size_t packed_group_bytes(tensor::DType type, int64_t cols) {
  const PackedFormat fmt = packed_format(type);
  if (fmt.qs_bytes == 0 || cols <= 0) return 0;
  const auto blocks = static_cast<size_t>(cols / fmt.block);
  return (blocks * (fmt.qs_bytes + fmt.scale_bytes) + kAlignment - 1) / kAlignment * kAlignment;
}

size_t packed_matrix_bytes(tensor::DType type, int64_t rows, int64_t cols) {
  if (rows <= 0) return 0;
  return packed_group_bytes(type, cols) * static_cast<size_t>((rows + kPackRows - 1) / kPackRows);
}

void PackedWeights::Free::operator()(uint8_t* p) const { std::free(p); }

PackedWeights::PackedWeights(const WeightMatrix& w, ThreadPool& pool) : PackedWeights(w, pool, nullptr) {}

PackedWeights::PackedWeights(const WeightMatrix& w, ThreadPool& pool, PackedArena& arena)
    : PackedWeights(w, pool, &arena) {}

PackedWeights::PackedWeights(const WeightMatrix& w, ThreadPool& pool, PackedArena* arena)
    : type_(w.type), rows_(w.rows), cols_(w.cols), group_bytes_(0), data_(nullptr) {
  const PackedFormat fmt = packed_format(w.type);
  const auto row_bytes = tensor::row_bytes(w.type, w.cols);
  if (fmt.qs_bytes == 0 || w.rows <= 0 || !row_bytes || *row_bytes != w.row_bytes || w.data == nullptr) {
    fail("pack: cannot pack a {} weight matrix {} x {}", tensor::dtype_name(w.type), w.rows, w.cols);
  }
  const PackGroupFn pack = pack_group_for(w.type);
  group_bytes_ = packed_group_bytes(w.type, w.cols);
  if (arena != nullptr) {
    data_ = arena->allocate(bytes());
  } else if (bytes() >= kHugePageBytes) {
    // Decode streams a matrix once per token: with 4 KiB pages it would take a TLB miss every
    // 4 KiB.
    owned_.reset(allocate_on_huge_pages(bytes()));
  } else {
    owned_.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlignment, (bytes() + kAlignment - 1) / kAlignment * kAlignment)));
    if (!owned_) fail("pack: out of memory for {} bytes", bytes());
  }
  if (data_ == nullptr) data_ = owned_.get();
  const PackedWeights* self = this;
  const WeightMatrix* wp = &w;
  const auto pack_one = [self, wp, pack](int64_t g, unsigned) {
    uint8_t* out = self->data_ + self->group_bytes_ * static_cast<size_t>(g);
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

bool matmul_rounds_like_ggml_simd(tensor::DType type) { return !packing_pays_off(type); }

}  // namespace lumen::backend::cpu
