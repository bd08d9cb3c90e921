#pragma once
// ggml's rope parameters, derived from the backend's RopeConfig the way llama.cpp derives them,
// so every backend builds its angles from the same f32 values:
//  - per pair i (i < rope_dims / 2) the angle starts at theta = position (f32) and is multiplied
//    by theta_scale = powf(freq_base, -2 / rope_dims) once per pair, in f32;
//  - llama3-style per-pair divisors (freq_factors) divide the angle before scaling;
//  - linear scaling multiplies the angle by freq_scale = 1 / factor;
//  - YaRN (ext_factor != 0) blends interpolated and extrapolated angles with ggml's ramp over
//    the correction dims from ggml_rope_yarn_corr_dims, and scales cos/sin by
//    attn_factor * (1 + 0.1 ln(1 / freq_scale)).
#include <cstdint>

#include "backend/backend.h"

namespace lumen::backend::common {

// ggml's rope op parameters, all in f32 as ggml keeps them.
struct RopeParams {
  int64_t rope_dims = 0;
  bool neox = false;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // 1 / context extension factor
  float ext_factor = 0.0f;   // YaRN extrapolation mix; 0 disables YaRN
  float attn_factor = 1.0f;  // YaRN magnitude factor applied on top of ggml's own
  float corr_dims[2] = {0.0f, 0.0f};
  const float* freq_factors = nullptr;
};

// Maps the backend's config to ggml's parameters as llama.cpp does by default: ext_factor is 1
// for YaRN and 0 otherwise, attn_factor is the file's rope.scaling.attn_factor (llama.cpp
// multiplies its yarn_attn_factor by it, after cancelling its own mscale on top of ggml's, so
// the net magnitude is attn_factor * (1 + 0.1 ln factor)), n_ctx_orig is original_context. Throws
// lumen::Error for an odd or out-of-range rope_dims, a non-positive base or factor, or YaRN
// without an original context.
RopeParams make_rope_params(const RopeConfig& config, int64_t head_dim);

// The pair count ggml's correction-dims formula gives for a rotation count `n_rot`.
float yarn_corr_dim(int64_t rope_dims, int64_t original_context, float n_rot, float freq_base);

}  // namespace lumen::backend::common
