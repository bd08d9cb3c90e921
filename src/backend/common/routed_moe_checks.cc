#include "backend/common/routed_moe_checks.h"

#include <initializer_list>
#include <utility>
#include <string_view>

#include "backend/common/expert_router.h"
#include "backend/common/op_checks.h"
#include "util/error.h"

namespace lumen::backend::common {

namespace {

using tensor::DType;

// A contiguous {cols, rows} matrix of `type` (elements of `bytes` bytes each).
void check_dense(const TensorView& t, DType type, size_t bytes, int64_t cols, int64_t rows, std::string_view op,
                 std::string_view name) {
  if (t.type != type || t.dims[0] != cols || t.rows() != rows || t.data == nullptr ||
      t.row_bytes != static_cast<size_t>(cols) * bytes) {
    fail("{}: {} must be {} {} x {}, rows packed", op, name, tensor::dtype_name(type), cols, rows);
  }
}

void check_apart(std::string_view op, const TensorView& out, std::string_view name,
                 std::initializer_list<const TensorView*> others) {
  for (const TensorView* other : others) {
    if (other != nullptr && other != &out && rows_overlap(out, *other))
      fail("{}: {} overlaps another operand", op, name);
  }
}

void check_2d(const TensorView& w, int64_t cols, int64_t rows, std::string_view name) {
  if (w.dims[2] * w.dims[3] != 1 || w.dims[0] != cols || w.dims[1] != rows) {
    fail("moe_ffn_routed: {} is {} x {} x {}, expected {} x {}", name, w.dims[0], w.dims[1], w.dims[2] * w.dims[3],
         cols, rows);
  }
}

}  // namespace

void check_route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                         const TensorView& experts, const TensorView& weights, const TensorView* counts) {
  constexpr std::string_view kOp = "route_experts";
  check_router_config(config);
  check_f32(logits, config.n_experts, kOp, "logits");
  const int64_t n = logits.rows();
  check_dense(experts, DType::I32, sizeof(int32_t), config.n_used, n, kOp, "experts");
  check_dense(weights, DType::F32, sizeof(float), config.n_used, n, kOp, "weights");
  if (selection_bias != nullptr) {
    check_dense(*selection_bias, DType::F32, sizeof(float), config.n_experts, 1, kOp, "selection_bias");
  }
  if (counts != nullptr) check_dense(*counts, DType::F32, sizeof(float), config.n_experts, 1, kOp, "counts");
  check_apart(kOp, experts, "experts", {&logits, selection_bias, &weights, counts});
  check_apart(kOp, weights, "weights", {&logits, selection_bias, counts});
  if (counts != nullptr) check_apart(kOp, *counts, "counts", {&logits, selection_bias});
}

void check_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                          const RoutedExperts& m, const TensorView& out) {
  constexpr std::string_view kOp = "moe_ffn_routed";
  const int64_t cols = x.dims[0], n = x.rows();
  check_f32(x, cols, kOp, "x");
  check_same_shape(x, out, kOp);
  if (m.gate == nullptr || m.up == nullptr || m.down == nullptr)
    fail("moe_ffn_routed: the experts' matrices are missing");
  const int64_t ff = m.gate->dims[1], n_experts = m.gate->dims[2];
  for (const TensorView* w : {m.gate, m.up, m.down}) {
    if (w->dims[3] != 1 || w->dims[2] != n_experts)
      fail("moe_ffn_routed: the expert tensors must be 3-D, one matrix an expert");
  }
  if (n_experts < 1 || m.gate->dims[0] != cols || m.up->dims[0] != cols || m.up->dims[1] != ff ||
      m.down->dims[0] != ff || m.down->dims[1] != cols) {
    fail("moe_ffn_routed: experts of gate {} x {}, up {} x {}, down {} x {} for rows of {} values", m.gate->dims[1],
         m.gate->dims[0], m.up->dims[1], m.up->dims[0], m.down->dims[1], m.down->dims[0], cols);
  }
  const int64_t k = experts.dims[0];
  if (k < 1) fail("moe_ffn_routed: {} experts per row", k);
  check_dense(experts, DType::I32, sizeof(int32_t), k, n, kOp, "experts");
  check_dense(weights, DType::F32, sizeof(float), k, n, kOp, "weights");
  const int shared = (m.shared_gate != nullptr) + (m.shared_up != nullptr) + (m.shared_down != nullptr);
  if (shared != 0 && shared != 3) fail("moe_ffn_routed: a shared expert needs its gate, up and down matrices");
  if (shared == 3) {
    const int64_t ff_shared = m.shared_gate->dims[1];
    check_2d(*m.shared_gate, cols, ff_shared, "the shared gate");
    check_2d(*m.shared_up, cols, ff_shared, "the shared up");
    check_2d(*m.shared_down, ff_shared, cols, "the shared down");
  }
  if (m.shared_logit != nullptr) {
    if (shared == 0) fail("moe_ffn_routed: a shared expert's logit without the shared expert");
    check_dense(*m.shared_logit, DType::F32, sizeof(float), 1, n, kOp, "the shared logit");
  }
  const int biases = (m.gate_bias != nullptr) + (m.up_bias != nullptr) + (m.down_bias != nullptr);
  if (biases != 0 && biases != 3) fail("moe_ffn_routed: expert biases need gate, up and down ones");
  if (biases == 3) {
    const std::pair<const TensorView*, int64_t> widths[] = {{m.gate_bias, ff}, {m.up_bias, ff}, {m.down_bias, cols}};
    for (const auto& [bias, width] : widths) {
      if (bias->type != DType::F32 || bias->dims[0] != width || bias->dims[1] != 1 || bias->dims[2] != n_experts ||
          bias->dims[3] != 1) {
        fail("moe_ffn_routed: expert biases must be f32 {{{}, 1, {}}}", width, n_experts);
      }
    }
  }
  check_apart(kOp, out, "out", {&x, &experts, &weights, m.shared_logit});
}

}  // namespace lumen::backend::common
