#pragma once
// Rotary position embedding, computed the way ggml's CPU rope computes it, so a forward pass
// built on it stays close to llama.cpp's logits:
//  - per pair i (i < rope_dims / 2) the angle starts at theta = position (f32) and is multiplied
//    by theta_scale = powf(freq_base, -2 / rope_dims) once per pair, in f32 (not recomputed by a
//    power per pair: that would round differently at long positions);
//  - llama3-style per-pair divisors (freq_factors) divide the angle before scaling;
//  - linear scaling multiplies the angle by freq_scale = 1 / factor;
//  - YaRN (ext_factor != 0) blends interpolated and extrapolated angles with ggml's ramp over
//    the correction dims from ggml_rope_yarn_corr_dims, and scales cos/sin by
//    attn_factor * (1 + 0.1 ln(1 / freq_scale));
//  - "NTK-aware" scaling is a different freq_base in the file; dynamic NTK (a base that grows
//    with the sequence) is refused at load (model/hparams.cc says why).
// Normal mode rotates (2i, 2i+1); NeoX mode rotates (i, i + rope_dims/2). Dimensions past
// rope_dims are left unchanged.
#include <cstdint>

#include "backend/backend.h"
#include "backend/common/rope_params.h"

namespace lumen::backend::cpu {

// The parameters are shared with every backend (backend/common/rope_params.h); the CPU's
// rope code names them as its own.
using common::make_rope_params;
using common::RopeParams;
using common::yarn_corr_dim;

// cos/sin of every pair's angle at `position`: cache[2i] = cos, cache[2i+1] = sin
// (rope_dims floats).
void rope_cache(const RopeParams& params, int32_t position, float* cache);

// Rotates one head of `head_dim` values in place with a cache from rope_cache.
void rope_head(const RopeParams& params, const float* cache, float* head);

}  // namespace lumen::backend::cpu
