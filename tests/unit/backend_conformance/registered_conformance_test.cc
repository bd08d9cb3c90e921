// Every registered row (registered_ops.h) on every compiled backend that has its op: the test
// named "<backend>_<row>" runs one row on a fresh backend. A backend without the op skips the
// row with the reason; the table's own test proves every declared op has rows.
#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>

#include "backend_registry.h"
#include "registered_ops.h"

namespace lumen::backend::conformance {
namespace {

struct RegisteredParam {
  const BackendEntry* backend;
  const RegisteredOp* op;
  RegisteredRow row;
};

std::string param_name(const RegisteredParam& p) {
  return std::string(p.backend->name) + "_" + registered_row_name(p.op->kind, p.row);
}

[[maybe_unused]] void PrintTo(const RegisteredParam& p, std::ostream* os) { *os << param_name(p); }

class RegisteredConformance : public ::testing::TestWithParam<RegisteredParam> {};

TEST_P(RegisteredConformance, MatchesReference) {
  const RegisteredParam& p = GetParam();
  if (const std::string reason = p.backend->unavailable(); !reason.empty()) GTEST_SKIP() << reason;
  const std::unique_ptr<Backend> backend = p.backend->make();
  if (!backend->has_op(p.op->kind)) GTEST_SKIP() << p.backend->name << " has no " << op_name(p.op->kind);
  p.op->check(*backend, p.row);
}

std::vector<RegisteredParam> all_params() {
  std::vector<RegisteredParam> params;
  for (const BackendEntry& entry : backends()) {
    for (const RegisteredOp& op : registered_ops()) {
      for (const RegisteredRow& row : op.rows) params.push_back({&entry, &op, row});
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Registered, RegisteredConformance, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<RegisteredParam>& p) { return param_name(p.param); });

// A declared op (op_observer.h) cannot go unchecked: it has registered rows, and the CPU, the
// reference backend, has it (so the rows run somewhere).
TEST(ConformanceTable, EveryDeclaredOpHasRegisteredRows) {
  std::set<OpKind> seen;
  for (const RegisteredOp& op : registered_ops()) {
    EXPECT_FALSE(op.rows.empty()) << op_name(op.kind);
    EXPECT_TRUE(seen.insert(op.kind).second) << op_name(op.kind) << " registered twice";
  }
  const std::unique_ptr<Backend> cpu = backends().front().make();
  ASSERT_EQ(cpu->name(), "cpu");
  for (size_t k = 0; k < kOpKindCount; ++k) {
    const auto kind = static_cast<OpKind>(k);
    if (op_availability_of(kind).kind != OpAvailability::Kind::Declared) continue;
    EXPECT_TRUE(seen.contains(kind)) << "no registered conformance rows for " << op_name(kind);
    EXPECT_TRUE(cpu->has_op(kind)) << "the CPU backend has no " << op_name(kind);
  }
}

// has_op follows the list: every backend has the ops every backend runs, and a feature's ops
// exactly when it supports the feature.
TEST(ConformanceTable, HasOpFollowsTheOpList) {
  for (const BackendEntry& entry : backends()) {
    if (!entry.unavailable().empty()) continue;
    const std::unique_ptr<Backend> backend = entry.make();
    for (size_t k = 0; k < kOpKindCount; ++k) {
      const auto kind = static_cast<OpKind>(k);
      const OpAvailability a = op_availability_of(kind);
      if (a.kind == OpAvailability::Kind::Every) {
        EXPECT_TRUE(backend->has_op(kind)) << entry.name << " " << op_name(kind);
      }
      if (a.kind == OpAvailability::Kind::Feature) {
        EXPECT_EQ(backend->has_op(kind), backend->supports(a.feature)) << entry.name << " " << op_name(kind);
      }
    }
  }
}

}  // namespace
}  // namespace lumen::backend::conformance
