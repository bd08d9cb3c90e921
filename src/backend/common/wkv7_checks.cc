#include "backend/common/wkv7_checks.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "backend/common/op_checks.h"
#include "util/error.h"

namespace lumen::backend::common {

namespace {

constexpr std::string_view kOp = "rwkv_wkv7";

}  // namespace

void check_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                     const TensorView& out) {
  const int64_t width = rows.r.dims[0], n = rows.r.rows();
  if (head_size < 1 || width < head_size || width % head_size != 0) {
    fail("{}: rows of {} values are not whole heads of {}", kOp, width, head_size);
  }
  const std::pair<const TensorView*, const char*> inputs[] = {{&rows.r, "r"}, {&rows.w, "w"}, {&rows.k, "k"},
                                                              {&rows.v, "v"}, {&rows.a, "a"}, {&rows.b, "b"}};
  for (const auto& [t, name] : inputs) {
    check_f32(*t, width, kOp, name);
    if (t->rows() != n) fail("{}: {} has {} rows, r {}", kOp, name, t->rows(), n);
    if (t->row_bytes != rows.r.row_bytes) fail("{}: the six rows must share one stride ({} has another)", kOp, name);
  }
  check_f32(out, width, kOp, "out");
  if (out.rows() != n) fail("{}: out has {} rows, the inputs {}", kOp, out.rows(), n);
  for (const auto& [t, name] : inputs) {
    if (values_overlap(*t, out)) fail("{}: out may not overlap {}", kOp, name);
  }
  const int64_t heads = width / head_size;
  // Sorted by first row, the sequences' rows may not overlap; sorted by state, nor their states.
  std::vector<const Wkv7Sequence*> order;
  order.reserve(seqs.size());
  for (const Wkv7Sequence& s : seqs) {
    if (s.first_token < 0 || s.n_tokens < 0 || s.first_token > n - s.n_tokens) {
      fail("{}: a sequence's rows {}..{} are outside the batch of {}", kOp, s.first_token, s.first_token + s.n_tokens,
           n);
    }
    const TensorView& st = s.state;
    if (st.type != tensor::DType::F32 || st.dims[0] != head_size || st.rows() != head_size * heads ||
        st.row_bytes != static_cast<size_t>(head_size) * sizeof(float) || st.data == nullptr) {
      fail("{}: a sequence's state must be f32 {{{}, {}}}, contiguous", kOp, head_size, head_size * heads);
    }
    if (values_overlap(st, out)) fail("{}: out may not overlap a sequence's state", kOp);
    order.push_back(&s);
  }
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->first_token < y->first_token; });
  int64_t end = 0;  // the furthest row a sequence before reaches
  for (const Wkv7Sequence* s : order) {
    if (s->n_tokens == 0) continue;
    if (s->first_token < end) fail("{}: two sequences share rows from {}", kOp, s->first_token);
    end = s->first_token + s->n_tokens;
  }
  // States are all one size: one overlapping another overlaps its neighbour in address order.
  std::sort(order.begin(), order.end(),
            [](auto* x, auto* y) { return std::less<const void*>()(x->state.data, y->state.data); });
  for (size_t i = 1; i < order.size(); ++i) {
    if (values_overlap(order[i - 1]->state, order[i]->state)) fail("{}: two sequences share a state", kOp);
  }
}

}  // namespace lumen::backend::common
