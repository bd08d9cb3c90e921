// The token-by-token scan (ssm_scan_kernel.h) on eight AVX2 lanes, called only when
// cpu_features reports AVX2: decode's scan. Written with intrinsics rather than left to the
// compiler, which kept the four channels' partial sums on the stack: here each of the four
// channels streamed together keeps its 8 partial sums in one register (lane l sums the state
// values s = l mod 8, as the portable loop does), so the four dependent add chains overlap and
// one pass over the state both updates it and reduces it against C.
#include "backend/cpu/ssm_scan.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "backend/cpu/ssm_scan_kernel.h"

namespace lumen::backend::cpu::detail {

namespace {

// Four consecutive channels' state rows (row floats apart) for one token; sums[r] as
// scan_four_channels returns it, up to FMA's rounding.
void four_channels_avx2(float* state, size_t row, const float* b, const float* c, int64_t s_size, float decay,
                        const float* x_dt, float* sums) {
  const __m256 vdecay = _mm256_set1_ps(decay);
  const __m256 xdt0 = _mm256_set1_ps(x_dt[0]), xdt1 = _mm256_set1_ps(x_dt[1]);
  const __m256 xdt2 = _mm256_set1_ps(x_dt[2]), xdt3 = _mm256_set1_ps(x_dt[3]);
  float* s0 = state;
  float* s1 = state + row;
  float* s2 = state + 2 * row;
  float* s3 = state + 3 * row;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t s = 0;
  for (; s + 8 <= s_size; s += 8) {
    const __m256 vb = _mm256_loadu_ps(b + s), vc = _mm256_loadu_ps(c + s);
    const __m256 h0 = _mm256_fmadd_ps(_mm256_loadu_ps(s0 + s), vdecay, _mm256_mul_ps(vb, xdt0));
    const __m256 h1 = _mm256_fmadd_ps(_mm256_loadu_ps(s1 + s), vdecay, _mm256_mul_ps(vb, xdt1));
    const __m256 h2 = _mm256_fmadd_ps(_mm256_loadu_ps(s2 + s), vdecay, _mm256_mul_ps(vb, xdt2));
    const __m256 h3 = _mm256_fmadd_ps(_mm256_loadu_ps(s3 + s), vdecay, _mm256_mul_ps(vb, xdt3));
    _mm256_storeu_ps(s0 + s, h0);
    _mm256_storeu_ps(s1 + s, h1);
    _mm256_storeu_ps(s2 + s, h2);
    _mm256_storeu_ps(s3 + s, h3);
    acc0 = _mm256_fmadd_ps(h0, vc, acc0);
    acc1 = _mm256_fmadd_ps(h1, vc, acc1);
    acc2 = _mm256_fmadd_ps(h2, vc, acc2);
    acc3 = _mm256_fmadd_ps(h3, vc, acc3);
  }
  alignas(32) float partial[4][8];
  _mm256_store_ps(partial[0], acc0);
  _mm256_store_ps(partial[1], acc1);
  _mm256_store_ps(partial[2], acc2);
  _mm256_store_ps(partial[3], acc3);
  for (int64_t r = 0; r < 4; ++r) {
    float* st = state + static_cast<size_t>(r) * row;
    float sum = 0.0f;
    for (int64_t t = s; t < s_size; ++t) {
      const float h = st[t] * decay + b[t] * x_dt[r];
      st[t] = h;
      sum += h * c[t];
    }
    for (int64_t l = 0; l < 8; ++l) sum += partial[r][l];
    sums[r] = sum;
  }
}

}  // namespace

bool have_ssm_scan_avx2() { return true; }

void ssm_scan_head_avx2(const SsmScanTask& task, int64_t head) {
  const int64_t s_size = task.state_size, first = head * task.head_dim, end = first + task.head_dim;
  const int64_t group = head / task.heads_per_group;
  const auto row = static_cast<size_t>(s_size);
  const float a = task.a[head], d = task.d[head], bias = task.dt_bias[head];
  for (int64_t t = 0; t < task.n; ++t) {
    const float* x = task.x + static_cast<size_t>(t) * task.x_stride;
    const float* b = task.b + static_cast<size_t>(t) * task.b_stride + group * s_size;
    const float* c = task.c + static_cast<size_t>(t) * task.c_stride + group * s_size;
    float* y = task.y + static_cast<size_t>(t) * task.y_stride;
    const float dt = ssm_softplus(task.dt[static_cast<size_t>(t) * task.dt_stride + static_cast<size_t>(head)] + bias);
    const float decay = std::exp(dt * a);  // once per head and token
    int64_t i = first;
    for (; i + 4 <= end; i += 4) {
      const float x_dt[4] = {x[i] * dt, x[i + 1] * dt, x[i + 2] * dt, x[i + 3] * dt};
      float sums[4];
      four_channels_avx2(task.state + static_cast<size_t>(i) * row, row, b, c, s_size, decay, x_dt, sums);
      for (int64_t r = 0; r < 4; ++r) y[i + r] = sums[r] + x[i + r] * d;
    }
    for (; i < end; ++i) {
      y[i] = scan_channel(task.state + static_cast<size_t>(i) * row, b, c, s_size, decay, x[i] * dt) + x[i] * d;
    }
  }
}

}  // namespace lumen::backend::cpu::detail

#else

namespace lumen::backend::cpu::detail {
bool have_ssm_scan_avx2() { return false; }
void ssm_scan_head_avx2(const SsmScanTask&, int64_t) {}
}  // namespace lumen::backend::cpu::detail

#endif
