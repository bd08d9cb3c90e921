#pragma once
// Internal to the CPU attention: reading one KV head's slice of a sequence's paged K/V cache a
// tile of keys at a time (the block table walked without a division per row, cache lines
// requested ahead, f16 rows read in place, compressed rows widened into a staging tile), and the
// tile kernels' dispatch on the row type.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/backend.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kv_store.h"
#include "tensor/quantize.h"

namespace lumen::backend::cpu::attention_internal {

// Walks positions [first, first + n) of one sequence through its block table, without a
// division per row: fn(j, address of one KV head's slice of position first + j's row).
template <typename Fn>
inline void for_each_row(const TensorView& cache, const SequenceSlice& seq, int64_t first, int64_t n,
                         size_t offset_bytes, int64_t block_size, Fn&& fn) {
  int64_t block = first / block_size, slot = first % block_size;
  const auto* base = static_cast<const char*>(cache.data) + offset_bytes;
  for (int64_t j = 0; j < n; ++j) {
    const auto row = static_cast<int64_t>(seq.block_table[static_cast<size_t>(block)]) * block_size + slot;
    fn(j, base + static_cast<size_t>(row) * cache.row_bytes);
    if (++slot == block_size) {
      slot = 0;
      ++block;
    }
  }
}

// Requests the cache lines of positions [first, first + n) of one KV head. A sequence's rows
// are scattered over blocks and a task reads only its head's slice of each row, which the
// hardware prefetcher cannot follow: without this the tile kernels wait on memory, one miss
// after another (profiled with 32 sequences decoding: most of attention's time). A tile's keys
// and values are requested together when the tile starts, so their misses overlap each other
// and the scores' arithmetic. Measured on Zen 4 (32 sequences x 30 layers of SmolLM2 decode,
// attention alone): 2.3x faster than with no requests. Requests go to L2 (prefetcht1): into
// L1 they stall on its few miss buffers (1.3x); requesting further ahead (the next tile too,
// or the whole span) piles up requests and does no better (1.7x to 2.2x).
// noipa, and no lambda: a function whose only effect is prefetching looks pure to GCC, which
// then deletes its calls.
[[gnu::noipa]] inline void request_rows(const TensorView& cache, const SequenceSlice& seq, int64_t first, int64_t n,
                                        int64_t offset, int64_t dim, int64_t block_size) {
  const size_t bytes = kv_slice_bytes(cache.type, dim);
  const auto* base = static_cast<const char*>(cache.data) + kv_slice_bytes(cache.type, offset);
  int64_t block = first / block_size, slot = first % block_size;
  for (int64_t j = 0; j < n; ++j) {
    const auto row = static_cast<int64_t>(seq.block_table[static_cast<size_t>(block)]) * block_size + slot;
    const char* address = base + static_cast<size_t>(row) * cache.row_bytes;
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(address + line, 0, 2);
    if (++slot == block_size) {
      slot = 0;
      ++block;
    }
  }
}

// The rows of one tile of keys (or values) of one KV head, as the tile kernels read them.
struct TileRows {
  const float* f32 = nullptr;  // f32 rows, `stride` floats apart
  int64_t stride = 0;
  const uint16_t* const* f16 = nullptr;  // f16 rows, read in place: one pointer per key
};

// Positions [first, first + n) of one sequence for one KV head: f16 rows as pointers into the
// cache (recorded in `pointers`); f32 rows straight from the cache when the tile lies inside one
// block, otherwise copied into `staging`; compressed rows (bf16, q8_0, q4_0, fp8) dequantized
// into `staging`, one head's slice of each row (whole blocks: the head starts at a block
// boundary), so the cache itself never exists in a wider copy.
// The widening of a compressed row: the tile table's SIMD form for q8_0 and q4_0, the tensor
// module's reference for bf16 and fp8 (the same bits either way).
inline tensor::BlockDequantizer row_dequantizer(const AttentionTileKernels& tiles, tensor::DType type) {
  if (type == tensor::DType::Q8_0) return tiles.dequantize_q8_0;
  if (type == tensor::DType::Q4_0) return tiles.dequantize_q4_0;
  return tensor::block_dequantizer(type);
}

inline TileRows tile_rows(const AttentionTileKernels& tiles, const TensorView& cache, const SequenceSlice& seq,
                          int64_t first, int64_t n, int64_t offset, int64_t dim, int64_t block_size, float* staging,
                          const uint16_t** pointers) {
  TileRows rows;
  if (cache.type != tensor::DType::F16 && cache.type != tensor::DType::F32) {
    const tensor::BlockDequantizer dequantize = row_dequantizer(tiles, cache.type);
    const int64_t blocks = dim / tensor::dtype_info(cache.type).block_elements;
    for_each_row(cache, seq, first, n, kv_slice_bytes(cache.type, offset), block_size,
                 [&](int64_t j, const char* row) { dequantize(row, staging + j * dim, blocks); });
    rows.f32 = staging;
    rows.stride = dim;
    return rows;
  }
  if (cache.type == tensor::DType::F16) {
    for_each_row(cache, seq, first, n, static_cast<size_t>(offset) * sizeof(uint16_t), block_size,
                 [&](int64_t j, const char* row) { pointers[j] = reinterpret_cast<const uint16_t*>(row); });
    rows.f16 = pointers;
    return rows;
  }
  const bool one_block = first / block_size == (first + n - 1) / block_size;
  if (one_block) {
    rows.f32 = cache.row<const float>(kv_row(seq, first, block_size)) + offset;
    rows.stride = static_cast<int64_t>(cache.row_bytes / sizeof(float));
    return rows;
  }
  for_each_row(cache, seq, first, n, static_cast<size_t>(offset) * sizeof(float), block_size,
               [&](int64_t j, const char* row) {
                 std::memcpy(staging + j * dim, row, static_cast<size_t>(dim) * sizeof(float));
               });
  rows.f32 = staging;
  rows.stride = dim;
  return rows;
}

inline void tile_qk(const AttentionTileKernels& tiles, const float* q, int64_t nq, const TileRows& k, int64_t nk,
                    int64_t dim, float* scores, int64_t ld) {
  if (k.f16 != nullptr) {
    tiles.qk_f16(q, nq, k.f16, nk, dim, scores, ld);
  } else {
    tiles.qk(q, nq, k.f32, k.stride, nk, dim, scores, ld);
  }
}

inline void tile_pv(const AttentionTileKernels& tiles, const float* p, int64_t nq, int64_t ld, const TileRows& v,
                    int64_t nk, int64_t dim, float* acc) {
  if (v.f16 != nullptr) {
    tiles.pv_f16(p, nq, ld, v.f16, nk, dim, acc);
  } else {
    tiles.pv(p, nq, ld, v.f32, v.stride, nk, dim, acc);
  }
}

// The end of the tile that starts at `first` (a tile is at most one block for f32 rows).
inline int64_t tile_end_at(int64_t first, int64_t last_pos, int64_t tile, int64_t bs) {
  return tile == bs ? std::min(last_pos + 1, (first / bs + 1) * bs) : std::min(last_pos + 1, first + tile);
}

}  // namespace lumen::backend::cpu::attention_internal
