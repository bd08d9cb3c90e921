#pragma once
// Internal to the CUDA backend: the host-side launchers of the kernels in this directory's .cu
// files. Pointers are device pointers; strides count elements (floats) unless named *_bytes.
// Launchers only enqueue work on `stream`; the backend checks cudaGetLastError after them
// (the .cu files stay free of the project's error and format headers).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "tensor/dtype.h"

namespace lumen::backend::cuda {

// ---- elementwise.cu ----
void launch_add(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* out,
                int64_t out_stride, int64_t rows, int64_t cols, cudaStream_t stream);
void launch_add_row(float* x, int64_t x_stride, const float* row, int64_t rows, int64_t cols,
                    cudaStream_t stream);
void launch_scale(float* x, int64_t x_stride, float factor, int64_t rows, int64_t cols,
                  cudaStream_t stream);
// Each head_dim slice of each row (cols a multiple of head_dim, a power of two) multiplied by
// the normalized Walsh-Hadamard matrix, bit for bit as backend/cpu/hadamard.cc.
void launch_hadamard(float* x, int64_t x_stride, int64_t rows, int64_t cols, int64_t head_dim, cudaStream_t stream);
bool hadamard_width_supported(int64_t head_dim);
// out = silu(gate) * up; out may alias gate or up.
void launch_swiglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                   float* out, int64_t out_stride, int64_t rows, int64_t cols, cudaStream_t stream);
// out = gelu(gate) * up through the 65536-entry f16 table (ggml's GELU table, see
// backend/cpu/activation.h).
void launch_geglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                  float* out, int64_t out_stride, int64_t rows, int64_t cols,
                  const uint16_t* gelu_table, cudaStream_t stream);
// One row per block; y may alias x.
void launch_rms_norm(const float* x, int64_t x_stride, const float* weight, float eps, float* y,
                     int64_t y_stride, int64_t rows, int64_t cols, cudaStream_t stream);
// sum = a + b, then y = rms_norm(sum): bit for bit launch_add then launch_rms_norm, one launch.
// sum may alias a or b; y may alias a or b, not sum.
void launch_add_rms_norm(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* sum,
                         int64_t sum_stride, const float* weight, float eps, float* y, int64_t y_stride,
                         int64_t rows, int64_t cols, cudaStream_t stream);

// ---- rope.cu ----
struct RopeKernelParams {
  int64_t rope_dims = 0;
  bool neox = false;
  float theta_scale = 1.0f;  // freq_base^(-2 / rope_dims), computed on the host as the CPU does
  float freq_scale = 1.0f;
  float ext_factor = 0.0f;
  float mscale = 1.0f;  // attn_factor, with YaRN's magnitude correction folded in
  float corr_low = 0.0f;
  float corr_high = 0.0f;
  const float* freq_factors = nullptr;  // device memory, rope_dims / 2 values, or null
  // CudaBackendOptions::rope_loads_first: each thread loads several pairs before it rotates one
  // (the same arithmetic; fewer memory latencies in a row).
  bool loads_first = false;
};
// x: row (token * n_heads + head) at x + row * row_stride; head_dim values each.
void launch_rope(float* x, int64_t row_stride, int64_t n_heads, int64_t n_tokens,
                 const int32_t* positions, const RopeKernelParams& params, cudaStream_t stream);

// ---- rope_store_kv.cu ----
// launch_rope of q and of k, then launch_store_kv of k's rows and v, in one launch and to the same
// bits. k's heads are contiguous (head_stride_k is the head dimension), so token t's key row is
// k + t * kv_heads * head_stride_k.
struct RopeStoreKvArgs {
  float* q = nullptr;
  int64_t head_stride_q = 0;  // floats from one query head to the next
  int64_t q_heads = 0;
  float* k = nullptr;
  int64_t head_stride_k = 0;
  int64_t kv_heads = 0;
  const float* v = nullptr;  // null with v_cache null (a latent cache)
  int64_t v_stride = 0;
  const int32_t* positions = nullptr;
  RopeKernelParams rope;
  const int64_t* dest_rows = nullptr;  // token t's cache row, or negative for none
  uint8_t* k_cache = nullptr;
  size_t k_row_bytes = 0;
  tensor::DType k_type = tensor::DType::F16;
  uint8_t* v_cache = nullptr;
  size_t v_row_bytes = 0;
  tensor::DType v_type = tensor::DType::F16;
};
void launch_rope_store_kv(const RopeStoreKvArgs& args, int64_t n_tokens, cudaStream_t stream);

// ---- rows.cu ----
// Whether get_rows handles this table type (every weight type, which dequantize_to_f16 handles
// too, and FP8 E4M3, a KV cache type only).
bool rows_supported(tensor::DType type);
// out row i = table row ids[i] (ids null: row i) as f32.
void launch_get_rows(tensor::DType type, const void* table, size_t table_row_bytes, int64_t cols,
                     const int32_t* ids, int64_t n, float* out, int64_t out_stride,
                     cudaStream_t stream);
// out (rows x cols f16, contiguous, 16-byte aligned) = rows [0, rows) of the matrix, dequantized.
void launch_dequantize_to_f16(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                              int64_t cols, uint16_t* out, cudaStream_t stream);
// Token t's k and v rows go to cache row dest_rows[t] (skipped when negative), stored as the
// cache's type as the CPU backend stores it (kv_codec.h: f32, f16, bf16, q8_0, q4_0, FP8).
// v_cache null: keys only (a latent cache, whose values are a view of its keys).
void launch_store_kv(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t kv_dim,
                     int64_t n_tokens, const int64_t* dest_rows, void* k_cache, size_t k_row_bytes,
                     tensor::DType k_type, void* v_cache, size_t v_row_bytes, tensor::DType v_type,
                     cudaStream_t stream);

// ---- row_argmax.cu ----
// backend::RowArgmax's layout (cuda_step_boundary.cc checks they agree), free of the backend headers.
struct DeviceRowArgmax {
  int32_t token;
  float value;
  int32_t finite;
};
// out[r] = row r's argmax (the lowest index among equal maxima; NaN never the largest), its
// value and whether every value of the row is finite (row_argmax_math.h).
void launch_row_argmax(const float* logits, int64_t width, int64_t rows, DeviceRowArgmax* out, cudaStream_t stream);

// ---- row_leading.cu ----
// A row to reduce to its leading candidates: its index among the step's logit rows, and the
// scale its total weight is wanted at (0: none).
struct DeviceLeadingRequest {
  int32_t row;
  float scale;
};
// backend::RowLeading's layout (cuda_step_boundary.cc checks they agree).
struct DeviceRowLeading {
  int32_t count;
  int32_t finite;
  double total;
  int32_t ids[64];
  float logits[64];
};
// out[r] = request r's row reduced (row_leading_math.h): its min(64, width) largest values,
// largest first and equal values in index order, whether the row is all finite, and
// sum exp((v - max) * scale) over its finite values when the scale is not 0.
void launch_row_leading(const float* logits, int64_t width, const DeviceLeadingRequest* requests, int64_t n_requests,
                        DeviceRowLeading* out, cudaStream_t stream);

// ---- activation_quant.cu ----
// Quantized activations, laid out for the GEMV kernels (not ggml's packed blocks): for token t,
// codes at qs + t * cols; Q8_0/Q8_1: scale d (rounded through f16, as the block stores it) at
// d[t * cols / 32 + b] and, for Q8_1, s = d * sum(codes) (through f16) at s[...]; Q8_K: f32
// scale at d[t * cols / 256 + b] and the sums of each 16 codes at bsums[t * cols / 16 + g].
struct Q8Activations {
  int8_t* qs = nullptr;
  float* d = nullptr;
  float* s = nullptr;
  int32_t* bsums = nullptr;
  int64_t cols = 0;
};
// Bytes a Q8Activations of n_tokens x cols needs, and the carving of such a buffer.
size_t q8_activation_bytes(int64_t n_tokens, int64_t cols);
Q8Activations carve_q8_activations(void* buffer, int64_t n_tokens, int64_t cols);
// act: Q8_0, Q8_1 or Q8_K (cols a multiple of 32, or 256 for Q8_K). Bit-exact with
// backend/cpu/activation_quant.cc.
void launch_quantize_activations(tensor::DType act, const float* x, int64_t x_stride,
                                 int64_t n_tokens, int64_t cols, const Q8Activations& out,
                                 cudaStream_t stream);

// ---- norm_quantize.cu ----
// rms_norm / add_rms_norm for rows of up to 4096 values (rms_norm_rows_supported), bit for bit
// launch_rms_norm's and launch_add_rms_norm's, each row's loads issued at once; with `act`
// (Q8_0, Q8_1 or Q8_K; nullptr: none) the output is also quantized into `q` exactly as
// launch_quantize_activations would quantize it (whole blocks only). false: nothing launched
// (the row is too long, or not whole blocks of act).
bool rms_norm_rows_supported(int64_t cols);
bool launch_rms_norm_rows(const float* x, int64_t x_stride, const float* weight, float eps, float* y, int64_t y_stride,
                          int64_t rows, int64_t cols, const tensor::DType* act, const Q8Activations& q,
                          cudaStream_t stream);
bool launch_add_rms_norm_rows(const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* sum,
                              int64_t sum_stride, const float* weight, float eps, float* y, int64_t y_stride,
                              int64_t rows, int64_t cols, const tensor::DType* act, const Q8Activations& q,
                              cudaStream_t stream);
// launch_swiglu's result, also quantized into q as `act`; false (nothing launched) where cols is
// not whole blocks of act.
bool launch_swiglu_quantized(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                             int64_t out_stride, int64_t rows, int64_t cols, tensor::DType act, const Q8Activations& q,
                             cudaStream_t stream);

// ---- gemv.cu ----
inline constexpr int kGemvMaxTokens = 8;
// The activation type a quantized weight type pairs with (as on the CPU), or F32 for the float
// weight types; nullopt-like DType::I8 for unsupported types.
tensor::DType gemv_activation_type(tensor::DType weight_type);
// y[t * y_stride + r] = W[r, :] . x_t for r < rows, t < n_tokens (<= kGemvMaxTokens), tokens
// [token_offset, token_offset + n_tokens) of the quantized activations.
void launch_gemv_quantized(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                           int64_t cols, const Q8Activations& x, int64_t token_offset,
                           int64_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream);
// The same for F32 / F16 / BF16 weights against f32 activations.
void launch_gemv_float(tensor::DType type, const void* w, size_t row_bytes, int64_t rows,
                       int64_t cols, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
                       int64_t y_stride, cudaStream_t stream);

// ---- gemm_int8.cu ----
// y[t * y_stride + r] = W[r, :] . x_t for every token t < n_tokens, on the int8 tensor cores
// (sm_80 or newer) straight from W's blocks: Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0 weights
// (int8_gemm_math.h) and Q2_K .. Q6_K (gemm_int8_kquant.cu), against the activations
// gemv_activation_type names. false (nothing launched): another type, or a shape it does not take.
bool int8_gemm_takes(tensor::DType type);
bool launch_gemm_int8(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                      const Q8Activations& x, int64_t n_tokens, float* y, int64_t y_stride, cudaStream_t stream);
// ---- gemm_int8_kquant.cu ----
// launch_gemm_int8's kernels for the K-quant types (int8_gemm_kquant_math.h), against Q8_K
// activations: its arguments, checked, and its grid of tiles.
namespace int8_gemm {
struct Int8GemmArgs;
}
void launch_gemm_int8_kquant(tensor::DType type, const int8_gemm::Int8GemmArgs& args, uint32_t row_tiles,
                             uint32_t token_tiles, cudaStream_t stream);

// ---- gemv_stream.cu ----
// The products of launch_gemv_quantized / launch_gemv_float by kernels that stream the weights
// (a block of 4 warps per row, 16-byte loads). They launch nothing and return false where the
// rows are not whole 16-byte vectors at 16-byte boundaries: the caller then uses gemv.cu's.
bool launch_gemv_quantized_stream(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                                  const Q8Activations& x, int64_t token_offset, int64_t n_tokens, float* y,
                                  int64_t y_stride, cudaStream_t stream);
bool launch_gemv_float_stream(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                              const float* x, int64_t x_stride, int64_t n_tokens, float* y, int64_t y_stride,
                              cudaStream_t stream);

// ---- gemv_tiled.cu ----
// launch_gemv_quantized's products, bit for bit, for several matrices of one weight type and width
// against the same activations in one launch (a single matmul, or Q/K/V and gate/up:
// CudaBackendOptions::grouped_gemv), by kernels that read each row with 16-byte loads (one warp
// per row, staged through the warp's shared memory; a block's warps take rows of one matrix,
// which one the block's index says), for any number of tokens in one launch: kGemvMaxTokens at a
// time, each group the pass launch_gemv_quantized would make, a row of one tile (4096 values or
// fewer) staged once for all of them. Launches nothing and returns false where a matrix's rows are
// not whole 16-byte vectors at 16-byte boundaries or there are more than kMaxTiledGemvMatrices.
// As a dependent launch (dependent_launch.cuh) a warp brings its row into L2 before the kernel
// ahead has ended.
inline constexpr int kMaxTiledGemvMatrices = 4;
struct TiledGemvMatrix {
  const void* w = nullptr;
  int64_t rows = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};
bool launch_gemv_quantized_tiled_group(tensor::DType type, size_t row_bytes, int64_t cols,
                                       std::span<const TiledGemvMatrix> matrices, const Q8Activations& x,
                                       int64_t token_offset, int64_t n_tokens, cudaStream_t stream);
// A gated FFN's gate and up (matrices 0 and 1 of a tiled group, same rows) with SwiGLU in the same
// launch (CudaBackendOptions::glu_epilogue): the block that writes the last of a 32-row slice's
// gate and up results computes swiglu_value for the slice, writes it to `out` and quantizes it
// into `q` as `act` (Q8_0 or Q8_1), exactly the bits launch_swiglu_quantized writes from the
// GEMV's outputs. `counters` holds one count per slice (rows / 32), all 0, and is left so.
struct GluEpilogue {
  unsigned* counters = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
  Q8Activations q;
  tensor::DType act = tensor::DType::Q8_0;
};
// Whether launch_gemv_quantized_tiled_glu takes gate and up of `rows` rows of `type` for `act`.
bool tiled_glu_takes(tensor::DType type, int64_t rows, tensor::DType act);
// false: nothing launched (what tiled_glu_takes refuses, or rows not whole aligned 16-byte vectors).
bool launch_gemv_quantized_tiled_glu(tensor::DType type, size_t row_bytes, int64_t cols, const TiledGemvMatrix& gate,
                                     const TiledGemvMatrix& up, const Q8Activations& x, int64_t n_tokens,
                                     const GluEpilogue& glu, cudaStream_t stream);

// ---- gemv_pipelined.cu ----
// launch_gemv_quantized_tiled_group's products, bit for bit, for up to kGemvMaxTokens tokens: the
// same tiles and arithmetic (gemv_tile_dot.cuh), but each warp keeps its next tile in flight
// (cp.async, two stages) and takes every W-th row of the launch, W the warps the device holds at
// once. Launches nothing and returns false for more tokens, unaligned rows or more than
// kMaxTiledGemvMatrices matrices (the caller then runs the tiled kernels). Needs sm_80.
bool launch_gemv_quantized_pipelined_group(tensor::DType type, size_t row_bytes, int64_t cols,
                                           std::span<const TiledGemvMatrix> matrices, const Q8Activations& x,
                                           int64_t token_offset, int64_t n_tokens, cudaStream_t stream);
// Float weights (F32, F16, BF16) on the same kernel, up to kGemvMaxTokens tokens of f32 x: 4 KB
// tiles, each lane adding its vectors' products in row order, so a token's result does not depend
// on its batch (the sums are grouped otherwise than launch_gemv_float_stream's: other last bits).
// Returns false, launching nothing, for other types, more tokens, or rows that are not whole
// 16-byte vectors at 16-byte boundaries.
bool launch_gemv_float_pipelined(tensor::DType type, const void* w, size_t row_bytes, int64_t rows, int64_t cols,
                                 const float* x, int64_t x_stride, int64_t n_tokens, float* y, int64_t y_stride,
                                 cudaStream_t stream);

// ---- gemm_prep.cu ----
// scale_state: 4 floats of device memory: [0] bits of max |x| (as uint32), [1] the power of two
// x is multiplied by before the f16 conversion (so no value overflows f16), [2] its inverse
// (cuBLAS's alpha), [3] zero (cuBLAS's beta).
void launch_convert_activations_f16(const float* x, int64_t x_stride, int64_t n_tokens,
                                    int64_t cols, float* scale_state, uint16_t* out,
                                    cudaStream_t stream);

}  // namespace lumen::backend::cuda
