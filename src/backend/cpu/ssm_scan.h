#pragma once
// Mamba 2's selective scan (Backend::ssm_scan) for one sequence and one head: token by token,
// each channel's state row decays by exp(dt' A), takes in B x dt', and is read out through C,
// plus the D skip. The sum over the state is kept in 8 partial sums (vectorizable), so it
// differs from ggml's SIMD order by f32 rounding only. Prompts take the chunked (SSD) form
// where AVX2 is (ssm_scan_chunked.h); this one serves decode and is its reference.
#include <cstddef>
#include <cstdint>

namespace lumen::backend::cpu {

struct SsmScanTask {
  const float* x = nullptr;  // n rows (x_stride floats apart): the inner width
  size_t x_stride = 0;
  const float* dt = nullptr;  // n rows: one value per head
  size_t dt_stride = 0;
  const float* b = nullptr;  // n rows: state size values per group
  size_t b_stride = 0;
  const float* c = nullptr;
  size_t c_stride = 0;
  int64_t n = 0;
  int64_t head_dim = 0;
  int64_t state_size = 0;
  int64_t heads_per_group = 0;
  const float* a = nullptr;  // per head
  const float* d = nullptr;
  const float* dt_bias = nullptr;
  float* state = nullptr;  // inner width rows of state_size values
  float* y = nullptr;      // n rows, y_stride floats apart
  size_t y_stride = 0;
};

// dt' as ggml computes it: log(1 + exp(v)) in f32, or v itself above 20.
float ssm_softplus(float v);

// One head over the task's tokens: the AVX2 build of the loop where the CPU has it.
void ssm_scan_head(const SsmScanTask& task, int64_t head);

namespace detail {
// The same loop compiled portably and with AVX2 + FMA (ssm_scan_avx2.cc); tests compare them.
void ssm_scan_head_portable(const SsmScanTask& task, int64_t head);
bool have_ssm_scan_avx2();
void ssm_scan_head_avx2(const SsmScanTask& task, int64_t head);
}  // namespace detail

}  // namespace lumen::backend::cpu
