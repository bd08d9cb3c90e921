#pragma once
// The argument checks of Backend::rwkv_wkv7, in front of every backend: every backend accepts
// and refuses the same calls with the same words, before anything is read or written.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen::backend::common {

// The six rows f32 {heads * head_size, n} of one stride, out the same shape and clear of every
// input's memory, each sequence's rows inside the batch and apart from the others', each
// state f32 {head_size, head_size * heads} contiguous and no two sequences' the same memory.
void check_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                     const TensorView& out);

}  // namespace lumen::backend::common
