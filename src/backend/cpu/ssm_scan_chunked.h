#pragma once
// Mamba 2's scan in its chunked form (state-space duality, "SSD"), for prompts: the tokens of a
// sequence are taken kSsmChunk at a time, and within a chunk of L tokens, with dt'_t the
// softplus'd step, a_t = dt'_t A the log-decay and cs_t = a_0 + ... + a_t,
//   y_t = D x_t + e^{cs_t} C_t . h  +  sum_{u <= t} (C_t . B_u) e^{cs_t - cs_u} dt'_u x_u
//   h  <- e^{cs_{L-1}} h + sum_u e^{cs_{L-1} - cs_u} dt'_u x_u B_u^T
// (h the head's state coming into the chunk). The same sums as the token-by-token recurrence
// (ssm_scan.h) in another order: three small matrix products per chunk instead of a pass over
// the whole state per token, so each state value loaded serves four tokens at once. Only the
// decays' differences are exponentiated (never e^{-cs}: cs falls without bound), so every
// factor is at most 1. Runs where AVX2 is (ssm_scan_chunked_avx2.cc); the token scan is the
// reference and serves decode.
#include <cstddef>
#include <cstdint>

#include "backend/cpu/ssm_scan.h"

namespace lumen::backend::cpu {

inline constexpr int64_t kSsmChunk = 64;

// A head's state is staged transposed in scratch: heads whose state is larger than this many
// floats take the token scan (real models: 64 x 128 = 8192), so scratch stays small whatever
// the file says.
inline constexpr int64_t kSsmChunkedMaxHeadState = int64_t{1} << 16;

// Whether the chunked form runs here (AVX2, a head state within the limit).
bool ssm_chunked_available(int64_t head_dim, int64_t state_size);
// Whether the kernels were compiled in (an x86 build).
bool have_ssm_chunked_avx2();

// Floats of one group's scores for a sequence of n tokens (every chunk's L x L block).
size_t ssm_chunk_scores_floats(int64_t n);
// Floats of scratch one worker needs (either phase).
size_t ssm_chunk_scratch_floats(int64_t head_dim, int64_t state_size);

// Phase 1, per group and chunk: scores[t][u] = C_t . B_u for the chunk's tokens (an L x L
// block at group_scores + chunk * L * L, rows of L). Independent across groups and chunks.
void ssm_chunk_scores(const SsmScanTask& task, int64_t group, int64_t chunk, float* group_scores, float* scratch);

// Phase 2, per head: every chunk in order from the head's state, writing y and leaving the
// state after the last token, as ssm_scan_head would.
void ssm_scan_head_chunked(const SsmScanTask& task, int64_t head, const float* group_scores, float* scratch);

}  // namespace lumen::backend::cpu
