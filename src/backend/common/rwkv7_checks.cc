#include "backend/common/rwkv7_checks.h"

#include <algorithm>
#include <vector>

#include "backend/common/op_checks.h"
#include "util/error.h"

namespace lumen::backend::common {

namespace {

void check_one_row(const TensorView& t, int64_t width, std::string_view op, std::string_view name) {
  check_f32(t, width, op, name);
  if (t.rows() != 1) fail("{}: {} must be one row", op, name);
}

void check_heads(int64_t width, int64_t head_size, std::string_view op) {
  if (head_size < 1 || width % head_size != 0)
    fail("{}: rows of {} values are not whole heads of {}", op, width, head_size);
}

}  // namespace

void check_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, int64_t group,
                      const TensorView& out) {
  constexpr std::string_view op = "rwkv7_norm";
  check_f32(x, x.dims[0], op, "x");
  if (group < 1 || x.dims[0] % group != 0)
    fail("{}: rows of {} values are not whole groups of {}", op, x.dims[0], group);
  check_one_row(weight, x.dims[0], op, "weight");
  check_one_row(bias, x.dims[0], op, "bias");
  check_same_shape(x, out, op);
}

void check_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                             const TensorView& out) {
  constexpr std::string_view op = "rwkv7_token_shift";
  const int64_t width = x.dims[0], n = x.rows();
  check_f32(x, width, op, "x");
  check_f32(mixes, width, op, "mixes");
  if (mixes.rows() < 1) fail("{}: no mixes", op);
  check_f32(out, width, op, "out");
  if (out.rows() != n * mixes.rows()) {
    fail("{}: out has {} rows, not {} rows x {} mixes", op, out.rows(), n, mixes.rows());
  }
  if (values_overlap(out, x)) fail("{}: out may not overlap x", op);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const TokenShiftSequence& s : seqs) {
    if (s.first_token < 0 || s.n_tokens < 0 || s.first_token > n - s.n_tokens) {
      fail("{}: a sequence's rows {}..{} are outside the batch of {}", op, s.first_token, s.first_token + s.n_tokens,
           n);
    }
    check_one_row(s.shift, width, op, "a shift row");
    if (values_overlap(s.shift, out) || values_overlap(s.shift, x))
      fail("{}: a shift row may not overlap x or out", op);
    if (s.n_tokens > 0) ranges.emplace_back(s.first_token, s.first_token + s.n_tokens);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) fail("{}: two sequences share row {}", op, ranges[i].first);
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (seqs[i].shift.data == seqs[j].shift.data) fail("{}: two sequences share a shift row", op);
    }
  }
}

void check_rwkv7_value_residual(const TensorView& v, const TensorView& first, const TensorView& mix,
                                const TensorView& v0) {
  constexpr std::string_view op = "rwkv7_value_residual";
  check_f32(v, v.dims[0], op, "v");
  check_same_shape(v, first, op);
  check_same_shape(v, mix, op);
  check_one_row(v0, v.dims[0], op, "v0");
}

void check_rwkv7_keys(const Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) {
  constexpr std::string_view op = "rwkv7_keys";
  const int64_t width = rows.w.dims[0];
  check_f32(rows.w, width, op, "w");
  check_heads(width, head_size, op);
  for (const TensorView* t : {&rows.a, &rows.k, &rows.kk, &rows.b}) check_same_shape(rows.w, *t, op);
  const TensorView* all[] = {&rows.w, &rows.a, &rows.k, &rows.kk, &rows.b};
  for (size_t i = 0; i < 5; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (values_overlap(*all[i], *all[j])) fail("{}: the rows w, a, k, kk and b may not overlap", op);
    }
  }
  check_one_row(weights.w0, width, op, "w0");
  check_one_row(weights.a0, width, op, "a0");
  check_one_row(weights.k_k, width, op, "k_k");
  check_one_row(weights.k_a, width, op, "k_a");
}

void check_rwkv7_bonus_gate(const TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                            const TensorView& g, const TensorView& r_k, int64_t head_size) {
  constexpr std::string_view op = "rwkv7_bonus_gate";
  check_f32(out, out.dims[0], op, "out");
  check_heads(out.dims[0], head_size, op);
  for (const TensorView* t : {&r, &k, &v, &g}) {
    check_same_shape(out, *t, op);
    if (values_overlap(out, *t)) fail("{}: out may not overlap r, k, v or g", op);
  }
  check_one_row(r_k, out.dims[0], op, "r_k");
}

}  // namespace lumen::backend::common
