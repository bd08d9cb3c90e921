#pragma once
// RWKV 7's state update ("wkv7", the generalized delta rule) for one sequence and one head,
// token by token. The head's state S is head_size x head_size, row i for value channel i and
// column j for key channel j; for each token, with r, w, k, v, a, b the head's slices of the
// token's rows:
//   sa_i    = sum_j a_j S[i][j]
//   S[i][j] = S[i][j] w_j + v_i k_j + sa_i b_j
//   out_i   = sum_j S[i][j] r_j
// (RWKV 7 passes a = -kk and b = kk * iclr, so the state forgets along kk before it learns.)
// The sums over j are kept in 8 partial sums (vectorizable lanes), so the result differs from
// ggml's rwkv_wkv7 by f32 rounding only. Heads and sequences are independent: callers run
// them in parallel (model/rwkv7_block.cc).
#include <cstddef>
#include <cstdint>

namespace lumen::backend::cpu {

struct Wkv7Task {
  // n rows, `stride` floats apart, each heads x head_size wide.
  const float* r = nullptr;
  const float* w = nullptr;  // the decay, in (0, 1)
  const float* k = nullptr;
  const float* v = nullptr;
  const float* a = nullptr;
  const float* b = nullptr;
  size_t stride = 0;
  int64_t n = 0;
  int64_t head_size = 0;
  float* state = nullptr;  // every head's state, head after head (heads x head_size^2)
  float* out = nullptr;    // n rows, out_stride floats apart
  size_t out_stride = 0;
};

// One head over the task's tokens: the AVX2 build of the loop where the CPU has it.
void wkv7_head(const Wkv7Task& task, int64_t head);

namespace detail {
// The same loop compiled portably and with AVX2 + FMA (rwkv_wkv7_avx2.cc); tests compare them.
void wkv7_head_portable(const Wkv7Task& task, int64_t head);
bool have_wkv7_avx2();
void wkv7_head_avx2(const Wkv7Task& task, int64_t head);
}  // namespace detail

}  // namespace lumen::backend::cpu
