// RWKV 7's wkv7 state update (backend/cpu/rwkv_wkv7.h), portable and AVX2 builds, against a
// plain double-precision reference of the same recurrence, on RWKV 7's heads of 64, a narrower
// head and an odd one (the lanes' tail), over many tokens from a nonzero state, with inputs as
// the model makes them (decays in (0.55, 1), a = -kk and b = kk * iclr with kk of unit length
// per head): every output and the state left behind agree within f32 rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/rwkv_wkv7.h"
#include "kernel_test_util.h"

namespace lumen::backend::cpu {
namespace {

using testing::random_values;

struct Shape {
  int64_t head_size, heads, tokens;
};

struct Inputs {
  std::vector<float> r, w, k, v, a, b, state;
};

Inputs make_inputs(const Shape& sh) {
  const auto width = static_cast<size_t>(sh.head_size * sh.heads), rows = width * static_cast<size_t>(sh.tokens);
  Inputs in{random_values(rows, 1),
            random_values(rows, 2, 0.55f, 1.0f),
            random_values(rows, 3),
            random_values(rows, 4),
            {},
            {},
            random_values(width * static_cast<size_t>(sh.head_size), 5, -0.5f, 0.5f)};
  const std::vector<float> kk = random_values(rows, 6), iclr = random_values(rows, 7, 0.0f, 1.0f);
  in.a.resize(rows);
  in.b.resize(rows);
  for (size_t head = 0; head < rows; head += static_cast<size_t>(sh.head_size)) {
    double norm = 0.0;
    for (int64_t c = 0; c < sh.head_size; ++c) norm += kk[head + c] * kk[head + c];
    for (int64_t c = 0; c < sh.head_size; ++c) {
      const auto unit = static_cast<float>(kk[head + c] / std::sqrt(norm));
      in.a[head + c] = -unit;
      in.b[head + c] = unit * iclr[head + c];
    }
  }
  return in;
}

// The recurrence in double: sa_i = a.S_i; S_ij = S_ij w_j + v_i k_j + sa_i b_j; out_i = S_i.r.
void reference(const Shape& sh, const Inputs& in, std::vector<double>& out, std::vector<double>& state) {
  const int64_t n = sh.head_size, width = n * sh.heads;
  state.assign(in.state.begin(), in.state.end());
  out.assign(static_cast<size_t>(width * sh.tokens), 0.0);
  for (int64_t t = 0; t < sh.tokens; ++t) {
    for (int64_t h = 0; h < sh.heads; ++h) {
      const size_t row = static_cast<size_t>(t * width + h * n);
      double* s = state.data() + static_cast<size_t>(h * n * n);
      for (int64_t i = 0; i < n; ++i) {
        double* si = s + i * n;
        double sa = 0.0;
        for (int64_t j = 0; j < n; ++j) sa += in.a[row + j] * si[j];
        double acc = 0.0;
        for (int64_t j = 0; j < n; ++j) {
          si[j] = si[j] * in.w[row + j] + static_cast<double>(in.v[row + i]) * in.k[row + j] + sa * in.b[row + j];
          acc += si[j] * in.r[row + j];
        }
        out[row + i] = acc;
      }
    }
  }
}

void run(const Shape& sh, const Inputs& in, bool avx2, std::vector<float>& out, std::vector<float>& state) {
  const int64_t width = sh.head_size * sh.heads;
  state = in.state;
  out.assign(static_cast<size_t>(width * sh.tokens), 0.0f);
  Wkv7Task task;
  task.r = in.r.data();
  task.w = in.w.data();
  task.k = in.k.data();
  task.v = in.v.data();
  task.a = in.a.data();
  task.b = in.b.data();
  task.stride = static_cast<size_t>(width);
  task.n = sh.tokens;
  task.head_size = sh.head_size;
  task.state = state.data();
  task.out = out.data();
  task.out_stride = static_cast<size_t>(width);
  for (int64_t h = 0; h < sh.heads; ++h) {
    if (avx2) {
      detail::wkv7_head_avx2(task, h);
    } else {
      detail::wkv7_head_portable(task, h);
    }
  }
}

// Largest |got - want| over the largest |want|: f32 rounding of sums of head_size terms.
double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return worst / scale;
}

class Wkv7 : public ::testing::TestWithParam<Shape> {};

TEST_P(Wkv7, PortableAndAvx2MatchADoubleReference) {
  const Shape sh = GetParam();
  const Inputs in = make_inputs(sh);
  std::vector<double> want_out, want_state;
  reference(sh, in, want_out, want_state);
  for (bool avx2 : {false, true}) {
    if (avx2 && !detail::have_wkv7_avx2()) continue;
    std::vector<float> out, state;
    run(sh, in, avx2, out, state);
    EXPECT_LT(relative_error(out, want_out), 1e-5) << (avx2 ? "avx2" : "portable");
    EXPECT_LT(relative_error(state, want_state), 1e-5) << (avx2 ? "avx2" : "portable");
  }
}

// The state carries across calls: two halves of a prompt give what the whole gives.
TEST_P(Wkv7, TwoChunksEqualOne) {
  Shape sh = GetParam();
  const Inputs in = make_inputs(sh);
  std::vector<float> whole_out, whole_state;
  run(sh, in, false, whole_out, whole_state);
  const int64_t width = sh.head_size * sh.heads, first = sh.tokens / 2;
  Inputs head = in, tail = in;
  for (auto* part : {&head, &tail}) {
    for (auto* v : {&part->r, &part->w, &part->k, &part->v, &part->a, &part->b}) {
      if (part == &head) v->resize(static_cast<size_t>(first * width));
      if (part == &tail) v->erase(v->begin(), v->begin() + first * width);
    }
  }
  std::vector<float> out1, state1, out2, state2;
  run({sh.head_size, sh.heads, first}, head, false, out1, state1);
  tail.state = state1;
  run({sh.head_size, sh.heads, sh.tokens - first}, tail, false, out2, state2);
  out1.insert(out1.end(), out2.begin(), out2.end());
  EXPECT_EQ(out1, whole_out);
  EXPECT_EQ(state2, whole_state);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Wkv7,
                         ::testing::Values(Shape{64, 4, 37}, Shape{32, 3, 20}, Shape{20, 2, 9}, Shape{64, 1, 1}));

}  // namespace
}  // namespace lumen::backend::cpu
