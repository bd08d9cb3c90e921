// The chunked scan's portable part: whether it may run here, and the scratch it needs (the
// kernels are in ssm_scan_chunked_avx2.cc).
#include "backend/cpu/ssm_scan_chunked.h"

#include "backend/cpu/cpu_features.h"

namespace lumen::backend::cpu {

bool ssm_chunked_available(int64_t head_dim, int64_t state_size) {
  static const bool avx2 = have_ssm_chunked_avx2() && selected_isa() >= Isa::kAvx2;
  return avx2 && head_dim * state_size <= kSsmChunkedMaxHeadState;
}

size_t ssm_chunk_scores_floats(int64_t n) {
  const int64_t chunks = (n + kSsmChunk - 1) / kSsmChunk;
  return static_cast<size_t>(chunks * kSsmChunk * kSsmChunk);
}

size_t ssm_chunk_scratch_floats(int64_t head_dim, int64_t state_size) {
  // Phase 2: the transposed state, W, C and B scaled per token, four rows of per-token factors;
  // phase 1 needs B transposed (state_size x L), which is less.
  return static_cast<size_t>(state_size * head_dim + kSsmChunk * kSsmChunk + 2 * kSsmChunk * state_size +
                             4 * kSsmChunk);
}

}  // namespace lumen::backend::cpu
