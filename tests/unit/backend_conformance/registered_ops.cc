#include "registered_ops.h"

#include <fmt/format.h>

namespace lumen::backend::conformance {

namespace {

// A function's static: filled by the check files' initializers whatever their order.
std::vector<RegisteredOp>& mutable_ops() {
  static std::vector<RegisteredOp> ops;
  return ops;
}

}  // namespace

bool register_op(RegisteredOp op) {
  mutable_ops().push_back(std::move(op));
  return true;
}

const std::vector<RegisteredOp>& registered_ops() { return mutable_ops(); }

std::string registered_row_name(OpKind kind, const RegisteredRow& row) {
  return fmt::format("{}_{}x{}x{}_m{}", op_name(kind), row.shape[0], row.shape[1], row.shape[2], row.mode);
}

}  // namespace lumen::backend::conformance
