#pragma once
// Internal to the CUDA backend: the launches of the LayerNorm blocks' kernels and an encoder's
// attention (encoder_ops.cu; their arithmetic is encoder_math.h's).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lumen::backend::cuda {

// The widest head the encoder attention kernel takes (8 values a lane).
inline constexpr int64_t kMaxEncoderHeadDim = 256;

struct BidirectionalAttentionParams {
  const float* q = nullptr;  // rows of n_heads * head_dim
  const float* k = nullptr;  // k and v: rows of (n_heads / group) * head_dim, kv_stride apart
  const float* v = nullptr;
  float* out = nullptr;  // like q
  int64_t q_stride = 0, kv_stride = 0, out_stride = 0;
  int64_t rows = 0;  // rows of the batch
  int64_t n_heads = 0, group = 1, head_dim = 0;
  float scale = 1.0f;
  // Per batch row: its sequence's first row and number of rows (0: no sequence owns the row).
  const int32_t* row_sequences = nullptr;
};

// y = LayerNorm(x) * weight + bias per row (y may be x).
void launch_layer_norm(const float* x, int64_t x_stride, const float* weight, const float* bias, float eps, float* y,
                       int64_t y_stride, int64_t rows, int64_t cols, cudaStream_t stream);
void launch_gelu_erf(float* x, int64_t x_stride, int64_t rows, int64_t cols, cudaStream_t stream);
// Backend::activation; `kind` is the backend::Activation's number.
void launch_activation(float* x, int64_t x_stride, int64_t rows, int64_t cols, int kind, cudaStream_t stream);
// From ggml's f16 table (the backend's device copy, as geglu reads it).
void launch_gelu_tanh(float* x, int64_t x_stride, int64_t rows, int64_t cols, const uint16_t* gelu_table,
                      cudaStream_t stream);
void launch_bidirectional_attention(const BidirectionalAttentionParams& params, cudaStream_t stream);
// out (rows x heads * padded_dims f16 values, contiguous) = x's heads (rows x_stride floats apart,
// heads of dims values side by side) rounded to f16, each head padded with zeros to padded_dims:
// an encoder's keys or values as the tensor-core prefill kernel reads them.
void launch_pack_heads_f16(const float* x, int64_t x_stride, int64_t rows, int64_t heads, int64_t dims,
                           int64_t padded_dims, uint16_t* out, cudaStream_t stream);

}  // namespace lumen::backend::cuda
