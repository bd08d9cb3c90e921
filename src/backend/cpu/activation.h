#pragma once
// The gated activations of the feed-forward block, computed as ggml's CPU backend computes
// them (ggml_vec_swiglu_f32 / ggml_vec_geglu_f32):
//  - SwiGLU: out = silu(g) * u with silu(g) = g / (1 + exp(-g)) in f32. ggml evaluates exp with
//    a polynomial on SIMD lanes (max error ~1.5 ulp) and with expf on the tail; we use expf
//    (portable) or our own 8-lane polynomial (AVX2, ~2 ulp), so an element can differ from
//    ggml's by a few ulp, never more.
//  - GeGLU: ggml (built with GGML_GELU_FP16, its default) does not evaluate the tanh GELU per
//    element but reads it from a 65536-entry f16 table (backend/common/gelu_table.h). We build
//    the same table (once, immutable) with the same f32 formula, tanhf and round-to-nearest-even
//    f16 conversion, so GeGLU matches ggml bit for bit, except where ggml's compiler contracted
//    the formula into FMAs (gnu C builds may) and that moved a table entry across an f16
//    rounding boundary: one f16 ulp, rarely.
#include <cstdint>

#include "backend/common/gelu_table.h"

namespace lumen::backend::cpu {

// out[i] = silu(gate[i]) * up[i]. out may alias gate or up.
void swiglu_row(const float* gate, const float* up, int64_t n, float* out);

// gpt-oss's clamped SwiGLU (Glu::SwigluOai), ggml's swiglu_oai with llama.cpp's constants:
// g = min(gate[i], 7), u = clamp(up[i], -7, 7), out[i] = g / (1 + expf(-1.702 g)) * (u + 1),
// expf per element as ggml computes it. out may alias gate or up.
void swiglu_oai_row(const float* gate, const float* up, int64_t n, float* out);

// out[i] = silu(x[i]) = x[i] / (1 + exp(-x[i])), as SwiGLU's gate (Mamba's convolution output).
// out may alias x.
void silu_row(const float* x, int64_t n, float* out);

// out[i] = gelu_tanh(gate[i]) * up[i] through ggml's f16 table (see above). out may alias.
void geglu_row(const float* gate, const float* up, int64_t n, float* out);

// The tanh-approximation GELU of one value exactly as ggml's table gives it (the table is
// shared with every backend: backend/common/gelu_table.h).
using common::gelu_tanh_like_ggml;

namespace detail {
// The portable SwiGLU (expf per element) and the AVX2 one (activation_avx2.cc; only when the
// build has it and the CPU supports it: have_activations_avx2). swiglu_row picks between
// them; tests compare both.
void swiglu_row_portable(const float* gate, const float* up, int64_t n, float* out);
bool have_activations_avx2();
void swiglu_row_avx2(const float* gate, const float* up, int64_t n, float* out);
void silu_row_portable(const float* x, int64_t n, float* out);
void silu_row_avx2(const float* x, int64_t n, float* out);
// GeGLU one element at a time (software f16 rounding), and on eight lanes (F16C rounding, a
// gather from the table widened to f32): the same values bit for bit, which a test checks.
void geglu_row_portable(const float* gate, const float* up, int64_t n, float* out);
void geglu_row_avx2(const float* gate, const float* up, int64_t n, float* out);
}  // namespace detail

}  // namespace lumen::backend::cpu
