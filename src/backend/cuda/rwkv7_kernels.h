#pragma once
// Internal to the CUDA backend: the launches of RWKV 7's kernels (rwkv7.cu; their arithmetic is
// rwkv7_math.h's).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lumen::backend::cuda {

// The widest head the wkv7 kernel takes (RWKV 7's): a thread per state row, the row in registers.
inline constexpr int64_t kWkv7HeadSize = 64;
// Token shift: a row's `prev` entry for a row no sequence owns.
inline constexpr int32_t kNoSequence = INT32_MIN;

// y = rwkv7_norm(x) over groups of `group` values of each row (y may be x).
void launch_rwkv7_norm(const float* x, int64_t x_stride, const float* weight, const float* bias, double eps,
                       int64_t group, float* y, int64_t y_stride, int64_t rows, int64_t width, cudaStream_t stream);

struct TokenShiftParams {
  const float* x = nullptr;
  int64_t x_stride = 0;
  const float* mixes = nullptr;  // n_mix rows
  int64_t mix_stride = 0, n_mix = 0;
  float* out = nullptr;  // row m * rows + t
  int64_t out_stride = 0;
  int64_t rows = 0, width = 0;
  // Per row: the row it mixes in (>= 0), -1 - s for sequence s's shift row, or kNoSequence.
  const int32_t* prev = nullptr;
  // Per sequence: its shift row, and its last row of x (-1: none) that the row then keeps.
  float* const* shift_rows = nullptr;
  const int32_t* last_rows = nullptr;
  int64_t n_seqs = 0;
};
// The mixes, then (a second launch, after every read) each sequence's last row into its shift row.
void launch_rwkv7_token_shift(const TokenShiftParams& params, cudaStream_t stream);

// f: Rwkv7Activation as an int (0 tanh, 1 sigmoid, 2 relu squared).
void launch_rwkv7_activation(float* x, int64_t x_stride, int64_t rows, int64_t width, int f, cudaStream_t stream);
void launch_rwkv7_value_residual(float* v, int64_t v_stride, const float* first, int64_t first_stride, const float* mix,
                                 int64_t mix_stride, const float* v0, int64_t rows, int64_t width, cudaStream_t stream);

// rwkv7_keys: all five rows share one stride (the transformer's scratch).
struct Rwkv7KeysParams {
  float *w = nullptr, *a = nullptr, *k = nullptr, *kk = nullptr, *b = nullptr;
  int64_t stride = 0;
  const float *w0 = nullptr, *a0 = nullptr, *k_k = nullptr, *k_a = nullptr;
  int64_t rows = 0, width = 0, head_size = 0;
};
void launch_rwkv7_keys(const Rwkv7KeysParams& params, cudaStream_t stream);

struct Rwkv7BonusGateParams {
  float* out = nullptr;
  const float *r = nullptr, *k = nullptr, *v = nullptr, *g = nullptr;
  int64_t out_stride = 0, in_stride = 0;  // r, k, v and g share one stride
  const float* r_k = nullptr;
  int64_t rows = 0, width = 0, head_size = 0;
};
void launch_rwkv7_bonus_gate(const Rwkv7BonusGateParams& params, cudaStream_t stream);

// One sequence of rwkv_wkv7 on the device.
struct Wkv7SequenceRecord {
  int64_t first_token;
  int64_t n_tokens;
  float* state;  // heads x head_size x head_size
};
struct Wkv7Params {
  const float *r = nullptr, *w = nullptr, *k = nullptr, *v = nullptr, *a = nullptr, *b = nullptr;
  int64_t stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t heads = 0, head_size = 0;
  const Wkv7SequenceRecord* seqs = nullptr;
  int64_t n_seqs = 0;
};
void launch_rwkv_wkv7(const Wkv7Params& params, cudaStream_t stream);

}  // namespace lumen::backend::cuda
