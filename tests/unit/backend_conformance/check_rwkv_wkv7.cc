// rwkv_wkv7 (RWKV 7's state update) against a plain reference in double: three sequences of
// different lengths in one batch, each from a random starting state, run in two calls (a
// prefill cut in two, then a decode row: the second call reads the states the first left). The
// inputs are shaped as RWKV 7 makes them (a decay in (0.55, 0.97), a = -kk and b = kk * iclr
// with kk of unit length per head), so the state stays bounded as it does in a model. Outputs
// and the states left behind are compared.
//
// The tolerance is a first-order bound on the f32 rounding, carried along with the reference
// (u = 2^-23, twice f32's unit roundoff, for the second-order terms). Per token and row i:
//   sa_i, a sum of head_size products, errs by at most head_size u sum_j |a_j S_ij| plus the
//     state's error carried through a: sum_j |a_j| E_ij;
//   S_ij = S_ij w_j + v_i k_j + sa_i b_j (three products, two additions) errs by 3u times the
//     terms' magnitudes, plus E_ij w_j and |b_j| times sa_i's error: the new bound E_ij;
//   out_i = sum_j S_ij r_j errs by head_size u sum_j |S_ij r_j| plus sum_j E_ij |r_j|.
// In absolute values the bound is worst-case: it grows faster with the tokens than the error
// does (measured on AVX2: errors reach at most 3.5% of the bound; the median tolerance is
// 0.001-0.015% of an output at 6-9 tokens, 0.23% at 70 tokens of heads of 64). Every output
// scaled by 1 + 1e-3 fails 91-100% of the short rows' outputs and 35% of the long row's; a
// kernel that drops a term or misreads the state misses by far more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "registered_ops.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

constexpr int kSequences = 3;
constexpr int kOperands = 6;  // r, w, k, v, a, b, side by side in one packed row

struct Inputs {
  int64_t head_size, heads, width, n;
  std::vector<float> packed;  // n rows of kOperands * width: r | w | k | v | a | b
  const float* operand(int64_t row, int which) const { return packed.data() + (row * kOperands + which) * width; }
};

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

Inputs make_inputs(int64_t head_size, int64_t heads, int64_t n) {
  Inputs in{head_size, heads, head_size * heads, n, {}};
  const auto size = static_cast<size_t>(in.width * n);
  const std::vector<float> r = random_values(size, 91), k = random_values(size, 92), v = random_values(size, 93);
  const std::vector<float> decay = random_values(size, 94, -3.0f, 3.0f), kk = random_values(size, 95);
  const std::vector<float> iclr = random_values(size, 96, -3.0f, 3.0f);
  in.packed.resize(size * kOperands);
  for (int64_t t = 0; t < n; ++t) {
    float* row = in.packed.data() + t * kOperands * in.width;
    for (int64_t h = 0; h < heads; ++h) {
      const auto at = static_cast<size_t>(t * in.width + h * head_size);
      double norm = 0.0;
      for (int64_t c = 0; c < head_size; ++c) norm += static_cast<double>(kk[at + c]) * kk[at + c];
      norm = std::max(std::sqrt(norm), 1e-12);
      for (int64_t c = 0; c < head_size; ++c) {
        const size_t i = at + static_cast<size_t>(c), col = static_cast<size_t>(h * head_size + c);
        const double unit = kk[i] / norm;
        row[col] = r[i];
        row[in.width + col] = static_cast<float>(std::exp(-0.606531 * sigmoid(decay[i])));
        row[2 * in.width + col] = k[i];
        row[3 * in.width + col] = v[i];
        row[4 * in.width + col] = static_cast<float>(-unit);
        row[5 * in.width + col] = static_cast<float>(unit * sigmoid(iclr[i]));
      }
    }
  }
  return in;
}

// One sequence's reference: its state and the bound on the kernel's error in each value.
struct Reference {
  std::vector<double> state, bound;
};

// Advances `ref` by batch row `t` of `in`, writing each output and its tolerance.
void reference_step(const Inputs& in, int64_t t, Reference& ref, double* want, double* tol) {
  const double u = std::ldexp(1.0, -23);
  const int64_t hs = in.head_size;
  const float *r = in.operand(t, 0), *w = in.operand(t, 1), *k = in.operand(t, 2);
  const float *v = in.operand(t, 3), *a = in.operand(t, 4), *b = in.operand(t, 5);
  for (int64_t h = 0; h < in.heads; ++h) {
    for (int64_t i = h * hs; i < (h + 1) * hs; ++i) {
      double* s = ref.state.data() + i * hs;
      double* e = ref.bound.data() + i * hs;
      const int64_t c0 = h * hs;
      double sa = 0.0, sa_mag = 0.0, sa_err = 0.0;
      for (int64_t j = 0; j < hs; ++j) {
        sa += a[c0 + j] * s[j];
        sa_mag += std::abs(a[c0 + j] * s[j]);
        sa_err += std::abs(a[c0 + j]) * e[j];
      }
      sa_err += static_cast<double>(hs) * u * sa_mag;
      double out = 0.0, out_mag = 0.0, out_err = 0.0;
      for (int64_t j = 0; j < hs; ++j) {
        const double decayed = s[j] * w[c0 + j], learned = static_cast<double>(v[i]) * k[c0 + j];
        const double forgot = sa * b[c0 + j];
        s[j] = decayed + learned + forgot;
        e[j] = e[j] * w[c0 + j] + std::abs(b[c0 + j]) * sa_err +
               3.0 * u * (std::abs(decayed) + std::abs(learned) + std::abs(forgot));
        out += s[j] * r[c0 + j];
        out_mag += std::abs(s[j] * r[c0 + j]);
        out_err += e[j] * std::abs(r[c0 + j]);
      }
      want[i] = out;
      tol[i] = out_err + static_cast<double>(hs) * u * out_mag + 1e-7;
    }
  }
}

void check_rwkv_wkv7(Backend& backend, const RegisteredRow& row) {
  const int64_t hs = row.shape[0], heads = row.shape[1], tokens = row.shape[2];
  // A long prompt, a short one, and a decode row; the first call takes part of each prompt.
  const int64_t long_rows = std::max<int64_t>(2, tokens - tokens / 3 - 1),
                short_rows = std::max<int64_t>(1, tokens / 3);
  const std::array<int64_t, kSequences> rows{long_rows, short_rows, 1};
  const std::array<int64_t, kSequences> first_call{long_rows / 2, short_rows - short_rows / 2, 0};
  const std::array<int64_t, kSequences> base{0, long_rows, long_rows + short_rows};
  const int64_t n = long_rows + short_rows + 1, width = hs * heads;
  const Inputs in = make_inputs(hs, heads, n);
  std::vector<BackendTensor> states;
  std::vector<Reference> ref;
  for (uint32_t q = 0; q < kSequences; ++q) {
    const std::vector<float> init = random_values(static_cast<size_t>(width * hs), 97 + q);
    states.push_back(upload_f32(backend, {hs, width, 1, 1}, init));
    ref.push_back({std::vector<double>(init.begin(), init.end()), std::vector<double>(init.size(), 0.0)});
  }
  std::vector<double> want(static_cast<size_t>(width * n)), tol(want.size());
  std::vector<float> got(want.size());
  for (int call = 0; call < 2; ++call) {
    // This call's batch: each sequence's rows of the call, packed one sequence after another.
    std::vector<Wkv7Sequence> seqs;
    std::vector<int64_t> source;  // the input row of each batch row
    for (size_t q = 0; q < kSequences; ++q) {
      const int64_t begin = call == 0 ? 0 : first_call[q];
      const int64_t count = call == 0 ? first_call[q] : rows[q] - first_call[q];
      seqs.push_back({static_cast<int64_t>(source.size()), count, states[q].view});
      for (int64_t t = 0; t < count; ++t) source.push_back(base[q] + begin + t);
    }
    const auto batch = static_cast<int64_t>(source.size());
    std::vector<float> packed(static_cast<size_t>(kOperands * width * std::max<int64_t>(batch, 1)));
    for (int64_t t = 0; t < batch; ++t) {
      std::copy_n(in.operand(source[static_cast<size_t>(t)], 0), kOperands * width,
                  packed.begin() + t * kOperands * width);
    }
    const BackendTensor pd = upload_f32(backend, {kOperands * width, std::max<int64_t>(batch, 1), 1, 1}, packed);
    auto part = [&](int which) {
      TensorView view = pd.view;
      view.dims = {width, batch, 1, 1};
      view.data = static_cast<float*>(pd.view.data) + which * width;
      return view;
    };
    const Wkv7Rows operands{part(0), part(1), part(2), part(3), part(4), part(5)};
    BackendTensor out = allocate(backend, DType::F32, {width, std::max<int64_t>(batch, 1), 1, 1});
    TensorView ov = out.view;
    ov.dims[1] = batch;
    backend.rwkv_wkv7(operands, hs, seqs, ov);
    const std::vector<float> o = download(backend, out.view);
    for (size_t q = 0; q < kSequences; ++q) {
      for (int64_t t = seqs[q].first_token; t < seqs[q].first_token + seqs[q].n_tokens; ++t) {
        const int64_t src = source[static_cast<size_t>(t)];
        reference_step(in, src, ref[q], want.data() + src * width, tol.data() + src * width);
        std::copy_n(o.begin() + t * width, width, got.begin() + src * width);
      }
    }
  }
  expect_close(got, want, tol, "out");
  for (size_t q = 0; q < kSequences; ++q) {
    std::vector<double> state_tol(ref[q].bound);
    for (double& b : state_tol) b += 1e-7;
    expect_close(download(backend, states[q].view), ref[q].state, state_tol, "state");
  }
}

// RWKV 7's heads of 64 (one decode-sized batch, one long prompt), small heads and heads whose
// width is not a multiple of the kernel's 8 lanes.
const bool kRwkvWkv7Registered = register_op(
    {OpKind::RwkvWkv7, {{{64, 2, 9}, 0}, {{64, 1, 70}, 0}, {{16, 3, 7}, 0}, {{12, 2, 6}, 0}}, check_rwkv_wkv7});

}  // namespace
}  // namespace lumen::backend::conformance
