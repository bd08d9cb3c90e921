// ssm_conv and ssm_scan (Mamba 2) against a plain reference in double: three sequences of
// different lengths in one batch (one of them a single decode row), each run from a random
// starting state in two calls (a prefill cut in two chunks, so the state the first call
// leaves is what the second reads). Outputs and the states left behind are compared.
//   ssm_conv: K f32 products summed in f32, a bias and SiLU (exp to a few ulp): each output
//     within 2^-20 of the magnitudes summed, plus SiLU's relative error.
//   ssm_scan: per token, exp(dt A), a multiply-add per state value and a sum over the state in
//     f32; over T tokens the state's rounding compounds at most linearly (|exp(dt A)| < 1), so
//     outputs within (T + state size) 2^-22 of the magnitudes summed.
#include <gtest/gtest.h>

#include <cmath>

#include "checks.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

// Rows of each of the three sequences in a case of `tokens` rows, and where the first call
// stops (the second runs the rest).
struct Split {
  std::array<int64_t, 3> rows;
  std::array<int64_t, 3> first_call;
};

Split split(int64_t tokens) {
  const int64_t a = std::max<int64_t>(1, tokens / 2), b = std::max<int64_t>(1, tokens - a - 1);
  return {{a, b, 1}, {a / 2, b - b / 3, 0}};  // the decode row comes in the second call only
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }
double softplus(double v) { return v > 20.0 ? v : std::log1p(std::exp(v)); }

// Runs an op twice (first chunks, then the rest) on the sequences' rows of a batch whose rows
// are the sequences' rows one after another: `run(rows_of_call, first_row_in_batch_of_each)`.
template <typename Run>
void two_calls(const Split& s, Run run) {
  for (int call = 0; call < 2; ++call) {
    std::array<int64_t, 3> begin{}, count{};
    for (size_t q = 0; q < 3; ++q) {
      begin[q] = call == 0 ? 0 : s.first_call[q];
      count[q] = call == 0 ? s.first_call[q] : s.rows[q] - s.first_call[q];
    }
    run(begin, count);
  }
}

}  // namespace

void check_ssm_conv(Backend& backend, const Case& c) {
  // Plain variables, not a structured binding: clang 14 cannot capture bindings in a lambda.
  const int64_t channels = c.shape[0], kernel = c.shape[1], tokens = c.shape[2];
  const Split s = split(tokens);
  const int64_t n = s.rows[0] + s.rows[1] + s.rows[2];
  const std::vector<float> x = random_values(static_cast<size_t>(channels * n), 61);
  const std::vector<float> w = random_values(static_cast<size_t>(channels * kernel), 62);
  const std::vector<float> bias = random_values(static_cast<size_t>(channels), 63, -0.5f, 0.5f);
  const BackendTensor wd = upload_f32(backend, {kernel, channels, 1, 1}, w);
  const BackendTensor bd = upload_f32(backend, {channels, 1, 1, 1}, bias);
  std::vector<BackendTensor> windows;
  std::vector<std::vector<double>> ref_window;
  for (uint32_t q = 0; q < 3; ++q) {
    const std::vector<float> init = random_values(static_cast<size_t>(channels * (kernel - 1)), 64 + q);
    windows.push_back(upload_f32(backend, {channels, kernel - 1, 1, 1}, init));
    ref_window.emplace_back(init.begin(), init.end());
  }
  std::vector<double> want(static_cast<size_t>(channels * n)), tol(want.size());
  std::vector<float> got(want.size());
  std::array<int64_t, 3> base{0, s.rows[0], s.rows[0] + s.rows[1]};
  two_calls(s, [&](const std::array<int64_t, 3>& begin, const std::array<int64_t, 3>& count) {
    // This call's batch: each sequence's rows of the call, packed.
    const int64_t rows = count[0] + count[1] + count[2];
    std::vector<float> xb(static_cast<size_t>(channels * std::max<int64_t>(rows, 1)));
    std::vector<SsmSequence> seqs;
    int64_t at = 0;
    for (size_t q = 0; q < 3; ++q) {
      std::copy_n(x.begin() + (base[q] + begin[q]) * channels, count[q] * channels, xb.begin() + at * channels);
      seqs.push_back({at, count[q], windows[q].view, {}});
      at += count[q];
    }
    const BackendTensor xd = upload_f32(backend, {channels, std::max<int64_t>(rows, 1), 1, 1}, xb);
    BackendTensor out = allocate(backend, DType::F32, {channels, std::max<int64_t>(rows, 1), 1, 1});
    TensorView xv = xd.view, ov = out.view;
    xv.dims[1] = ov.dims[1] = rows;
    backend.ssm_conv(xv, wd.view, bd.view, seqs, ov);
    const std::vector<float> o = download(backend, out.view);
    at = 0;
    for (size_t q = 0; q < 3; ++q) {
      std::vector<double>& win = ref_window[q];
      for (int64_t t = 0; t < count[q]; ++t, ++at) {
        const float* row = x.data() + (base[q] + begin[q] + t) * channels;
        const size_t dst = static_cast<size_t>((base[q] + begin[q] + t) * channels);
        for (int64_t ch = 0; ch < channels; ++ch) {
          double sum = 0.0, mag = 0.0;
          for (int64_t k = 0; k < kernel; ++k) {
            const double in = k < kernel - 1 ? win[static_cast<size_t>(k * channels + ch)] : row[ch];
            sum += w[static_cast<size_t>(ch * kernel + k)] * in;
            mag += std::abs(w[static_cast<size_t>(ch * kernel + k)] * in);
          }
          const double v = sum + bias[static_cast<size_t>(ch)];
          want[dst + static_cast<size_t>(ch)] = silu(v);
          tol[dst + static_cast<size_t>(ch)] =
              (mag + std::abs(v)) * std::ldexp(1.0, -20) + 1e-6 * std::abs(silu(v)) + 1e-7;
          got[dst + static_cast<size_t>(ch)] = o[static_cast<size_t>(at * channels + ch)];
        }
        // The window moves on by this row.
        for (int64_t k = 0; k + 1 < kernel - 1; ++k) {
          std::copy_n(win.begin() + (k + 1) * channels, channels, win.begin() + k * channels);
        }
        std::copy(row, row + channels, win.begin() + (kernel - 2) * channels);
      }
    }
  });
  expect_close(got, want, tol, "out");
  for (size_t q = 0; q < 3; ++q) {
    const std::vector<double> exact(ref_window[q].size(), 0.0);
    expect_close(download(backend, windows[q].view), ref_window[q], exact, "conv_window");
  }
}

void check_ssm_scan(Backend& backend, const Case& c) {
  const int64_t state_size = c.shape[0], heads = c.shape[1], tokens = c.shape[2];
  const int64_t groups = c.mode, head_dim = 16, inner = heads * head_dim, bc = state_size * groups;
  const Split s = split(tokens);
  const int64_t n = s.rows[0] + s.rows[1] + s.rows[2];
  const std::vector<float> x = random_values(static_cast<size_t>(inner * n), 71);
  const std::vector<float> dt = random_values(static_cast<size_t>(heads * n), 72, -3.0f, 1.0f);
  const std::vector<float> b = random_values(static_cast<size_t>(bc * n), 73);
  const std::vector<float> cm = random_values(static_cast<size_t>(bc * n), 74);
  const std::vector<float> a = random_values(static_cast<size_t>(heads), 75, -4.0f, -0.5f);
  const std::vector<float> d = random_values(static_cast<size_t>(heads), 76, 0.5f, 1.5f);
  const std::vector<float> dt_bias = random_values(static_cast<size_t>(heads), 77, -1.0f, 1.0f);
  const BackendTensor ad = upload_f32(backend, {1, heads, 1, 1}, a), dd = upload_f32(backend, {1, heads, 1, 1}, d);
  const BackendTensor bias_d = upload_f32(backend, {heads, 1, 1, 1}, dt_bias);
  const SsmScanWeights weights{&ad.view, &dd.view, &bias_d.view, head_dim, groups};
  std::vector<BackendTensor> states;
  std::vector<std::vector<double>> ref_state;
  for (uint32_t q = 0; q < 3; ++q) {
    const std::vector<float> init = random_values(static_cast<size_t>(state_size * inner), 78 + q);
    states.push_back(upload_f32(backend, {state_size, inner, 1, 1}, init));
    ref_state.emplace_back(init.begin(), init.end());
  }
  std::vector<double> want(static_cast<size_t>(inner * n)), tol(want.size());
  std::vector<float> got(want.size());
  const std::array<int64_t, 3> base{0, s.rows[0], s.rows[0] + s.rows[1]};
  // One batch holds x, dt, B and C side by side in each row, as the model's projection does
  // (strided operands).
  const int64_t width = inner + heads + 2 * bc;
  two_calls(s, [&](const std::array<int64_t, 3>& begin, const std::array<int64_t, 3>& count) {
    const int64_t rows = count[0] + count[1] + count[2];
    std::vector<float> packed(static_cast<size_t>(width * std::max<int64_t>(rows, 1)));
    std::vector<SsmSequence> seqs;
    int64_t at = 0;
    for (size_t q = 0; q < 3; ++q) {
      for (int64_t t = 0; t < count[q]; ++t) {
        const int64_t src = base[q] + begin[q] + t;
        float* row = packed.data() + (at + t) * width;
        std::copy_n(x.begin() + src * inner, inner, row);
        std::copy_n(dt.begin() + src * heads, heads, row + inner);
        std::copy_n(b.begin() + src * bc, bc, row + inner + heads);
        std::copy_n(cm.begin() + src * bc, bc, row + inner + heads + bc);
      }
      seqs.push_back({at, count[q], {}, states[q].view});
      at += count[q];
    }
    const BackendTensor pd = upload_f32(backend, {width, std::max<int64_t>(rows, 1), 1, 1}, packed);
    auto part = [&](int64_t first, int64_t cols) {
      TensorView v = pd.view;
      v.dims = {cols, rows, 1, 1};
      v.data = static_cast<float*>(pd.view.data) + first;
      return v;
    };
    BackendTensor y = allocate(backend, DType::F32, {inner, std::max<int64_t>(rows, 1), 1, 1});
    TensorView yv = y.view;
    yv.dims[1] = rows;
    backend.ssm_scan(part(0, inner), part(inner, heads), part(inner + heads, bc), part(inner + heads + bc, bc), weights,
                     seqs, yv);
    const std::vector<float> out = download(backend, y.view);
    at = 0;
    for (size_t q = 0; q < 3; ++q) {
      std::vector<double>& h = ref_state[q];
      for (int64_t t = 0; t < count[q]; ++t, ++at) {
        const int64_t src = base[q] + begin[q] + t;
        const int64_t steps = begin[q] + t + 1;  // tokens the state has taken in by now
        for (int64_t head = 0; head < heads; ++head) {
          const double dtp = softplus(static_cast<double>(dt[static_cast<size_t>(src * heads + head)]) +
                                      dt_bias[static_cast<size_t>(head)]);
          const double decay = std::exp(dtp * a[static_cast<size_t>(head)]);
          const int64_t g = head / (heads / groups);
          for (int64_t i = head * head_dim; i < (head + 1) * head_dim; ++i) {
            const double xi = x[static_cast<size_t>(src * inner + i)];
            double sum = 0.0, mag = 0.0;
            for (int64_t st = 0; st < state_size; ++st) {
              double& hv = h[static_cast<size_t>(i * state_size + st)];
              hv = hv * decay + b[static_cast<size_t>(src * bc + g * state_size + st)] * xi * dtp;
              const double term = hv * cm[static_cast<size_t>(src * bc + g * state_size + st)];
              sum += term;
              mag += std::abs(term) + std::abs(hv);
            }
            const double yi = sum + xi * d[static_cast<size_t>(head)];
            const auto at_out = static_cast<size_t>(src * inner + i);
            want[at_out] = yi;
            tol[at_out] = (mag + std::abs(xi)) * static_cast<double>(steps + state_size) * std::ldexp(1.0, -22) + 1e-6;
            got[at_out] = out[static_cast<size_t>(at * inner + i)];
          }
        }
      }
    }
  });
  expect_close(got, want, tol, "y");
  for (size_t q = 0; q < 3; ++q) {
    std::vector<double> state_tol(ref_state[q].size());
    for (size_t i = 0; i < state_tol.size(); ++i) {
      state_tol[i] = (std::abs(ref_state[q][i]) + 1.0) * static_cast<double>(tokens) * std::ldexp(1.0, -21);
    }
    expect_close(download(backend, states[q].view), ref_state[q], state_tol, "state");
  }
}

}  // namespace lumen::backend::conformance
