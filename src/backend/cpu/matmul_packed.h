#pragma once
// Weights rearranged once, at load, for the AVX-512 VNNI matmul kernels ("packed" weights).
//
// Why. In the file's layout each row is a run of blocks, so a kernel works row by row: every
// 32-element block of every row needs its own unpacking, its own int->float conversion and its
// own scale multiply, and the per-row results end as horizontal sums. In the packed layout the
// rows come in groups of kPackRows = 16, and 4 consecutive bytes of each of the 16 rows sit side
// by side in one 64-byte vector: one vpdpbusd then multiplies 4 elements of 16 rows by the same
// 4 activation bytes (a broadcast), and its 16 int32 lanes are the 16 rows' partial sums. A
// block's 16 integer sums are converted and scaled by one vector op each, and no horizontal sums
// remain. The values are exactly the file's: packing only moves bytes (and flips the sign bit of
// Q8_0 codes so they become the unsigned operand of vpdpbusd).
//
// Layout of one group of 16 rows (row 16g + r; rows past the matrix are zero, scale 0):
//   for each block b: kQsBytes bytes of codes, as chunks of 64 bytes; in chunk c, bytes
//                      [4r, 4r + 4) are bytes [4c, 4c + 4) of row r's block qs;
//   then, for each block b: kScaleBytes bytes: the 16 rows' f16 d, then (Q4_1) their 16 f16 m;
//   padded to a multiple of 64 bytes.
// Q4_0 / Q4_1: 4 chunks (a chunk's low nibbles are elements 4c..4c+3, its high nibbles
// 16+4c..16+4c+3); Q5_0: those 4 chunks, then a fifth holding each row's 4 bytes of qh (bit j:
// bit 4 of element j); Q8_0: 8 chunks of codes XOR 0x80.
//
// The K-quants pack per super-block of 256 elements ("block" above), with their sub-block scales
// beside d (the kernels, matmul_packed_kquant_avx512.cc, say how they are read):
// Q4_K: 32 chunks, chunk k holding bytes [4k, 4k + 4) of each row's qs (the file's nibble order:
// sub-block 2p in the low nibbles of chunks 8p..8p+7, sub-block 2p + 1 in their high nibbles);
// then 8 x 16 scale bytes, 8 x 16 min bytes (pairs of sub-blocks side by side: [4][16][2]), the
// 16 rows' f16 d and their 16 f16 dmin. Q5_K: Q4_K's 32 chunks, then 8 chunks of qh (chunk k:
// bytes [4k, 4k + 4) of each row's qh, bit j of a byte the fifth bit of sub-block j), then Q4_K's
// scale bytes.
// Q6_K: per 32 elements, 4 chunks of low nibbles (as Q4_0's) and 2 chunks of the codes' top two
// bits; then 16 x 16 signed scale bytes and the 16 rows' f16 d.
// IQ4_NL packs as Q4_0 (its nibbles index the 16 levels, which the kernel looks up); so does
// MXFP4, its scales the 16 rows' exponent bytes (one byte each, so its packed copy is no larger
// than the file's blocks). IQ4_XS: per
// 32-element sub-block, Q4_0's 4 chunks of its 16 code bytes; then 8 x 16 int8 scales (ls - 32)
// and the 16 rows' f16 d.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/dtype.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {

struct WeightMatrix;
class PackedArena;

inline constexpr int kPackRows = 16;

struct PackedFormat {
  size_t qs_bytes = 0;     // codes of one block of the group's 16 rows
  size_t scale_bytes = 0;  // scales (and mins) of one block of the group's 16 rows
  int64_t block = 32;      // elements per block: 32, or a K-quant's 256-element super-block
};

// The packed format of `type`, or qs_bytes == 0 when the type has none.
PackedFormat packed_format(tensor::DType type);

// The bytes of one packed group of 16 rows of `cols` values, and of a whole rows x cols matrix
// (what PackedWeights takes); 0 for a type without a packed format.
size_t packed_group_bytes(tensor::DType type, int64_t cols);
size_t packed_matrix_bytes(tensor::DType type, int64_t rows, int64_t cols);

class PackedWeights {
 public:
  // Packs w (of a type with a packed format), spreading groups of rows over the pool, into
  // memory of its own (on 2 MiB pages when it fills at least one).
  PackedWeights(const WeightMatrix& w, ThreadPool& pool);
  // The same into memory from `arena`, which must outlive this object (a backend's arena: its
  // small matrices then share 2 MiB pages, packed_arena.h).
  PackedWeights(const WeightMatrix& w, ThreadPool& pool, PackedArena& arena);

  tensor::DType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return (rows_ + kPackRows - 1) / kPackRows; }
  size_t group_bytes() const { return group_bytes_; }
  size_t bytes() const { return group_bytes_ * static_cast<size_t>(groups()); }
  const uint8_t* group(int64_t g) const { return data_ + group_bytes_ * static_cast<size_t>(g); }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  PackedWeights(const WeightMatrix& w, ThreadPool& pool, PackedArena* arena);

  tensor::DType type_;
  int64_t rows_, cols_;
  size_t group_bytes_;
  std::unique_ptr<uint8_t[], Free> owned_;  // null when the memory is an arena's
  uint8_t* data_;
};

// Whether the matmul has packed kernels for `type` at instruction-set level selected_isa(), so
// that packing it is worth the time and memory.
bool packing_pays_off(tensor::DType type);

// Whether the matmul of `type` at instruction-set level selected_isa() rounds exactly as the
// unpacked SIMD kernels and ggml's x86 dot products do (eight float partial sums per row and
// block), so that a forward pass matches llama.cpp's CPU backend to rounding. False where the
// packed kernels run (Q4_0, Q4_1, Q5_0, Q8_0, IQ4_NL, Q4_K, Q5_K, Q6_K, IQ4_XS with AVX-512 VNNI): they sum each block
// (a K-quant's super-block) as one exact integer (matmul_packed_avx512.cc).
bool matmul_rounds_like_ggml_simd(tensor::DType type);

}  // namespace lumen::backend::cpu
