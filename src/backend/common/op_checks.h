#pragma once
// The argument checks of the Backend's public ops, run once in front of every backend
// (backend/common/backend.cc) so that every backend accepts and refuses the same inputs with
// the same words, and a backend's own code checks only what its kernels add (a CUDA tensor
// in device memory, a weight type it has kernels for). Each throws lumen::Error.
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend_types.h"

namespace lumen::backend::common {

// t is an f32 tensor with `cols` values per row and float-aligned rows.
void check_f32(const TensorView& t, int64_t cols, std::string_view op, std::string_view name);
// b is f32 with a's row length and a's number of rows.
void check_same_shape(const TensorView& a, const TensorView& b, std::string_view op);

// A whole number of blocks per row of weights, from non-null host memory.
void check_upload(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data);
// w is 2-D {in, out}; x f32 {in, n}; y f32 {out, n}.
void check_matmul(const TensorView& w, const TensorView& x, const TensorView& y);
void check_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, const TensorView& out);
// The table and out fit (get_rows_check.h) and every id names a row of the table.
void check_get_rows_ids(const TensorView& table, std::span<const int32_t> ids, const TensorView& out);
void check_rotate_heads(const TensorView& x, int64_t head_dim);
// x is f32 {head_dim, heads, tokens} with one position per token.
void check_rope(const TensorView& x, std::span<const int32_t> positions);
void check_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                    const KvLayer& cache);
// Whether the memory of a's rows and b's rows (rows x row_bytes each) overlaps; an empty view
// overlaps nothing.
bool rows_overlap(const TensorView& a, const TensorView& b);
// Whether the bytes the rows' values take overlap: the last row ends after its dims[0] floats, not
// its stride, so a view inside another's row padding does not overlap it.
bool values_overlap(const TensorView& a, const TensorView& b);
// The rows of a head-shaped tensor ({head_dim, heads, tokens}, heads contiguous): {head_dim *
// heads, tokens}, the same memory.
TensorView token_rows(const TensorView& heads);
// q and k as rope takes them with heads of one size, k's heads contiguous, v and k's rows as
// store_kv takes them, and no two of q, k, v overlapping.
void check_rope_store_kv(const TensorView& q, const TensorView& k, const TensorView& v,
                         std::span<const int32_t> positions, std::span<const SequenceSlice> seqs, const KvLayer& cache);
// A block id of the cache.
void check_kv_block(const KvLayer& cache, int64_t block, std::string_view op);
void check_kv_rows(const KvLayer& cache, int64_t src, int64_t dst);
void check_shift_keys(const KvLayer& cache, std::span<const int32_t> blocks, int64_t head_dim);
// The step's arrays fit together: one position per token, logit rows inside the batch, a
// logits destination wide enough when there is one.
void check_step(const StepMetadata& step);

}  // namespace lumen::backend::common
