#pragma once
// Conformance rows that an op's check file registers itself, so that a new op's conformance is
// one file (its rows, its scalar reference, the registration) instead of an enum, a table, a
// dispatch switch and a declaration here. Every compiled backend runs every registered row
// whose op it has (Backend::has_op); registered_conformance_test.cc runs them and checks that
// every declared op of backend/op_observer.h has rows.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace lumen::backend::conformance {

struct RegisteredRow {
  std::array<int64_t, 3> shape = {0, 0, 0};  // what the numbers mean is the op's check's business
  int mode = 0;
};

struct RegisteredOp {
  OpKind kind;
  std::vector<RegisteredRow> rows;
  // Runs one row on a backend that has the op and compares it with the reference (gtest
  // failures naming the element).
  std::function<void(Backend&, const RegisteredRow&)> check;
};

// For a namespace-scope initializer in the op's check file:
//   const bool kRegistered = register_op({OpKind::AddRmsNorm, {{...}}, check_add_rms_norm});
bool register_op(RegisteredOp op);
const std::vector<RegisteredOp>& registered_ops();
// "add_rms_norm_4096x2x0_m0": unique among the registered rows, usable as a test name.
std::string registered_row_name(OpKind kind, const RegisteredRow& row);

}  // namespace lumen::backend::conformance
