// The chunked scan (ssm_scan_chunked.h) on AVX2 + FMA: its three products per chunk, and the
// chunk's scores, are one register-blocked kernel (4 rows x 16 columns of accumulators); the
// decays' exponentials are taken 8 at a time. Compiled with -mavx2 -mfma; called only when
// cpu_features reports AVX2 (ssm_chunked_available).
#include "backend/cpu/ssm_scan_chunked.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/exp_avx2.h"

namespace lumen::backend::cpu {

namespace {

// out[i][j] += sum over k of A(i, k) * b[k][j] for i < m, j < n, k < depth, where A(i, k) is
// a[i * a_row + k * a_col], b's rows are ldb floats apart and out's ldo apart. With `causal`,
// row block i..i+3 stops at k = i + 3 (A is lower triangular, zero above the diagonal).
void gemm_acc(int64_t m, int64_t n, int64_t depth, const float* a, int64_t a_row, int64_t a_col, const float* b,
              int64_t ldb, float* out, int64_t ldo, bool causal) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      __m256 acc[4][2];
      for (int r = 0; r < 4; ++r) {
        acc[r][0] = _mm256_loadu_ps(out + (i + r) * ldo + j);
        acc[r][1] = _mm256_loadu_ps(out + (i + r) * ldo + j + 8);
      }
      const int64_t k_end = causal ? std::min(depth, i + 4) : depth;
      for (int64_t k = 0; k < k_end; ++k) {
        const __m256 b0 = _mm256_loadu_ps(b + k * ldb + j);
        const __m256 b1 = _mm256_loadu_ps(b + k * ldb + j + 8);
        for (int r = 0; r < 4; ++r) {
          const __m256 av = _mm256_broadcast_ss(a + (i + r) * a_row + k * a_col);
          acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        _mm256_storeu_ps(out + (i + r) * ldo + j, acc[r][0]);
        _mm256_storeu_ps(out + (i + r) * ldo + j + 8, acc[r][1]);
      }
    }
    for (; i < m; ++i) {
      __m256 acc0 = _mm256_loadu_ps(out + i * ldo + j), acc1 = _mm256_loadu_ps(out + i * ldo + j + 8);
      const int64_t k_end = causal ? std::min(depth, i + 1) : depth;
      for (int64_t k = 0; k < k_end; ++k) {
        const __m256 av = _mm256_broadcast_ss(a + i * a_row + k * a_col);
        acc0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + k * ldb + j), acc0);
        acc1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + k * ldb + j + 8), acc1);
      }
      _mm256_storeu_ps(out + i * ldo + j, acc0);
      _mm256_storeu_ps(out + i * ldo + j + 8, acc1);
    }
  }
  for (; j < n; ++j) {  // columns past the last 16 (heads narrower than real models')
    for (int64_t i = 0; i < m; ++i) {
      const int64_t k_end = causal ? std::min(depth, i + 1) : depth;
      float sum = out[i * ldo + j];
      for (int64_t k = 0; k < k_end; ++k) sum += a[i * a_row + k * a_col] * b[k * ldb + j];
      out[i * ldo + j] = sum;
    }
  }
}

// v[i] = e^{v[i]} for i < n.
void exp_in_place(float* v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, exp_avx2(_mm256_loadu_ps(v + i)));
  for (; i < n; ++i) v[i] = std::exp(v[i]);
}

}  // namespace

bool have_ssm_chunked_avx2() { return true; }

void ssm_chunk_scores(const SsmScanTask& task, int64_t group, int64_t chunk, float* group_scores, float* scratch) {
  const int64_t n_state = task.state_size, t0 = chunk * kSsmChunk, lc = std::min(kSsmChunk, task.n - t0);
  float* bt = scratch;  // bt[s][u] = B_u[s]
  for (int64_t u = 0; u < lc; ++u) {
    const float* b = task.b + static_cast<size_t>(t0 + u) * task.b_stride + group * n_state;
    for (int64_t s = 0; s < n_state; ++s) bt[s * kSsmChunk + u] = b[s];
  }
  float* scores = group_scores + chunk * kSsmChunk * kSsmChunk;
  std::fill_n(scores, kSsmChunk * kSsmChunk, 0.0f);
  const float* c = task.c + static_cast<size_t>(t0) * task.c_stride + group * n_state;
  gemm_acc(lc, lc, n_state, c, static_cast<int64_t>(task.c_stride), 1, bt, kSsmChunk, scores, kSsmChunk, false);
}

void ssm_scan_head_chunked(const SsmScanTask& task, int64_t head, const float* group_scores, float* scratch) {
  const int64_t n_state = task.state_size, dim = task.head_dim, first = head * dim;
  const int64_t group = head / task.heads_per_group;
  const float a = task.a[head], d = task.d[head], bias = task.dt_bias[head];
  float* st = scratch;                        // the state transposed: st[s][p]
  float* w = st + n_state * dim;              // w[t][u]: the chunk's causal weights
  float* ce = w + kSsmChunk * kSsmChunk;      // ce[t][s] = e^{cs_t} C_t[s]
  float* bc = ce + kSsmChunk * n_state;       // bc[u][s] = e^{cs_last - cs_u} dt'_u B_u[s]
  float* cs = bc + kSsmChunk * n_state;       // cumulative log-decay
  float* step = cs + kSsmChunk;               // dt'
  float* in_factor = step + kSsmChunk;        // e^{cs_t}: the incoming state's decay at t
  float* out_factor = in_factor + kSsmChunk;  // e^{cs_last - cs_u}: token u's decay to the end
  float* state = task.state + static_cast<size_t>(first) * static_cast<size_t>(n_state);
  for (int64_t p = 0; p < dim; ++p) {
    for (int64_t s = 0; s < n_state; ++s) st[s * dim + p] = state[p * n_state + s];
  }
  const auto x_stride = static_cast<int64_t>(task.x_stride), y_stride = static_cast<int64_t>(task.y_stride);
  for (int64_t t0 = 0, chunk = 0; t0 < task.n; t0 += kSsmChunk, ++chunk) {
    const int64_t lc = std::min(kSsmChunk, task.n - t0);
    float sum = 0.0f;
    for (int64_t u = 0; u < lc; ++u) {
      step[u] = ssm_softplus(task.dt[static_cast<size_t>(t0 + u) * task.dt_stride + static_cast<size_t>(head)] + bias);
      sum += step[u] * a;
      cs[u] = sum;
    }
    const float last = cs[lc - 1];
    const float* scores = group_scores + chunk * kSsmChunk * kSsmChunk;
    for (int64_t t = 0; t < lc; ++t) {
      float* row = w + t * kSsmChunk;
      for (int64_t u = 0; u <= t; ++u) row[u] = cs[t] - cs[u];
      exp_in_place(row, t + 1);
      for (int64_t u = 0; u <= t; ++u) row[u] *= scores[t * kSsmChunk + u] * step[u];
      std::fill(row + t + 1, row + lc, 0.0f);  // gemm_acc's causal row blocks read up to 3 past t
    }
    for (int64_t u = 0; u < lc; ++u) {
      in_factor[u] = cs[u];
      out_factor[u] = last - cs[u];
    }
    exp_in_place(in_factor, lc);
    exp_in_place(out_factor, lc);
    const float decay = std::exp(last);
    for (int64_t t = 0; t < lc; ++t) {
      const float fc = in_factor[t], fb = out_factor[t] * step[t];
      const float* c = task.c + static_cast<size_t>(t0 + t) * task.c_stride + group * n_state;
      const float* b = task.b + static_cast<size_t>(t0 + t) * task.b_stride + group * n_state;
      for (int64_t s = 0; s < n_state; ++s) {
        ce[t * n_state + s] = fc * c[s];
        bc[t * n_state + s] = fb * b[s];
      }
    }
    const float* x = task.x + static_cast<size_t>(t0) * task.x_stride + first;
    float* y = task.y + static_cast<size_t>(t0) * task.y_stride + first;
    for (int64_t t = 0; t < lc; ++t) {
      for (int64_t p = 0; p < dim; ++p) y[t * y_stride + p] = x[t * x_stride + p] * d;
    }
    gemm_acc(lc, dim, n_state, ce, n_state, 1, st, dim, y, y_stride, false);  // from the state coming in
    gemm_acc(lc, dim, lc, w, kSsmChunk, 1, x, x_stride, y, y_stride, true);   // within the chunk
    for (int64_t i = 0; i < n_state * dim; ++i) st[i] *= decay;
    gemm_acc(n_state, dim, lc, bc, 1, n_state, x, x_stride, st, dim, false);  // the state going out
  }
  for (int64_t p = 0; p < dim; ++p) {
    for (int64_t s = 0; s < n_state; ++s) state[p * n_state + s] = st[s * dim + p];
  }
}

}  // namespace lumen::backend::cpu

#else

namespace lumen::backend::cpu {
bool have_ssm_chunked_avx2() { return false; }
void ssm_chunk_scores(const SsmScanTask&, int64_t, int64_t, float*, float*) {}
void ssm_scan_head_chunked(const SsmScanTask&, int64_t, const float*, float*) {}
}  // namespace lumen::backend::cpu

#endif
