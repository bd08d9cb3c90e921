#pragma once
// The inner loops of attention on one tile of keys, as a table of functions with one
// implementation per instruction set: portable C++ (attention_tiles.cc), and 256-bit SIMD
// (attention_tiles_simd.h) built for AVX2 + FMA + F16C (attention_tiles_avx2.cc) and again
// with AVX-512 F/VL (attention_tiles_avx512.cc), each compiled with those flags and only
// called when the CPU has them. The two SIMD tables give identical results.
//
// f32 cache rows are read through a base pointer and a stride; f16 rows (the default cache) are
// read in place through one pointer per key, since a tile may cross blocks and a sequence's
// blocks lie anywhere. Widening f16 to f32 is exact, so the f16 forms must give, bit for bit,
// what the f32 forms give on the widened rows (tests check that): a key's score or a query's
// accumulator never depends on the row type's storage, only on the values.
#include <cstdint>

namespace lumen::backend::cpu {

struct AttentionTileKernels {
  // scores[i * ld + j] = sum_d q[i * dim + d] * k[j * k_stride + d], i < nq, j < nk.
  void (*qk)(const float* q, int64_t nq, const float* k, int64_t k_stride, int64_t nk,
             int64_t dim, float* scores, int64_t ld);
  // acc[i * dim + d] += sum_j p[i * ld + j] * v[j * v_stride + d], i < nq, d < dim.
  void (*pv)(const float* p, int64_t nq, int64_t ld, const float* v, int64_t v_stride,
             int64_t nk, int64_t dim, float* acc);
  // The same with f16 rows: key j is k[j][0 .. dim), value j is v[j][0 .. dim).
  void (*qk_f16)(const float* q, int64_t nq, const uint16_t* const* k, int64_t nk, int64_t dim,
                 float* scores, int64_t ld);
  void (*pv_f16)(const float* p, int64_t nq, int64_t ld, const uint16_t* const* v, int64_t nk,
                 int64_t dim, float* acc);
  // dst[j] = f32(f16(src[j] * scale)), rounding to nearest even as tensor::float_to_fp16 does
  // (dst may be src). Queries meet an f16 K and probabilities an f16 V in this form.
  void (*round_f16)(const float* src, int64_t n, float scale, float* dst);
  // s[j] = exp(s[j] - shift) for j < n (every argument <= 0); returns the sum of the results.
  float (*exp_shifted)(float* s, int64_t n, float shift);
  // The same with the sum in double (llama.cpp's softmax sums in double): the exact f16 path's
  // probabilities. Arguments may be -inf (masked keys), whose exp is 0.
  double (*exp_shifted_f64)(float* s, int64_t n, float shift);
  // dst[j] = src[j] * scale (dst may be src): a tile's scores scaled into the exact path's rows.
  void (*scale)(const float* src, int64_t n, float scale, float* dst);
  // The largest of x[0 .. n), NaNs ignored (-inf for none): a chunk's row maximum. Forms may
  // differ only in the sign of a zero maximum, which no exp(x[j] - max) can tell apart.
  float (*max)(const float* x, int64_t n);
  // `blocks` q8_0 / q4_0 blocks (ggml's layouts) widened to f32: a compressed KV cache's rows on
  // their way into a staging tile. Each value is one product, code times the block's f16 scale,
  // so every form gives tensor::dequantize_row's bits (tests check that).
  void (*dequantize_q8_0)(const void* src, float* dst, int64_t blocks);
  void (*dequantize_q4_0)(const void* src, float* dst, int64_t blocks);
};

const AttentionTileKernels& portable_attention_tiles();
// Null when this build has no AVX2 (AVX-512) kernels.
const AttentionTileKernels* avx2_attention_tiles();
const AttentionTileKernels* avx512_attention_tiles();

// The best table for the CPU this runs on (chosen once).
const AttentionTileKernels& best_attention_tiles();

}  // namespace lumen::backend::cpu
