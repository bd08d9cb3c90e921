// Every row of the conformance table on every compiled backend: the test named
// "<backend>_<case>" runs one row on a fresh backend and compares it with the scalar reference.
#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "backend_registry.h"
#include "checks.h"
#include "tensor/dtype.h"
#include "util/error.h"

namespace lumen::backend::conformance {
namespace {

struct Param {
  const BackendEntry* backend;
  Case row;
};

std::string param_name(const Param& p) { return std::string(p.backend->name) + "_" + case_name(p.row); }

// Failure messages name the row, not the parameter's bytes.
[[maybe_unused]] void PrintTo(const Param& p, std::ostream* os) { *os << param_name(p); }

void run_case(Backend& backend, const Case& c) {
  switch (c.op) {
    case Op::kMatmul:
    case Op::kMatmulSameInput:
    case Op::kMatmulGlu: check_matmul_ops(backend, c); return;
    case Op::kGetRows: check_get_rows(backend, c); return;
    case Op::kRmsNorm:
    case Op::kAdd:
    case Op::kAddRow:
    case Op::kScale:
    case Op::kSwiglu:
    case Op::kGeglu: check_pointwise(backend, c); return;
    case Op::kRope: check_rope(backend, c); return;
    case Op::kStoreKv:
    case Op::kKvBlocks: check_kv_ops(backend, c); return;
    case Op::kAttention: check_attention(backend, c); return;
    case Op::kMoeFfn: check_moe_ffn(backend, c); return;
    case Op::kSsmConv: check_ssm_conv(backend, c); return;
    case Op::kSsmScan: check_ssm_scan(backend, c); return;
  }
  FAIL() << "no check for op " << op_name(c.op);
}

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, MatchesReference) {
  const BackendEntry* entry = GetParam().backend;
  const Case& c = GetParam().row;
  if (const std::string reason = entry->unavailable(); !reason.empty()) GTEST_SKIP() << reason;
  if (!entry->supports(c)) {
    GTEST_SKIP() << entry->name << " has no " << op_name(c.op) << " for " << tensor::dtype_name(c.type);
  }
  if (entry->name == "cpu") RecordProperty("isa", std::string(cpu::isa_name(cpu::selected_isa())));
  const std::unique_ptr<Backend> backend = entry->make();
  run_case(*backend, c);
}

std::vector<Param> all_params() {
  std::vector<Param> params;
  for (const BackendEntry& entry : backends()) {
    for (const Case& c : all_cases()) params.push_back({&entry, c});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Table, Conformance, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& p) { return param_name(p.param); });

// The table itself: every op of backend.h has rows, and every type the CPU backend computes
// with is in them, so a new op or type cannot go unchecked by forgetting the table.
TEST(ConformanceTable, CoversEveryOp) {
  std::set<Op> seen;
  for (const Case& c : all_cases()) seen.insert(c.op);
  for (Op op : kAllOps) EXPECT_TRUE(seen.contains(op)) << "no rows for " << op_name(op);
}

TEST(ConformanceTable, CoversEveryCpuType) {
  std::set<std::pair<Op, tensor::DType>> seen;
  for (const Case& c : all_cases()) seen.emplace(c.op, c.type);
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const tensor::DTypeInfo* info = tensor::dtype_info(raw);
    if (info == nullptr) continue;
    const tensor::DType type = info->type;
    if (cpu::matmul_supports(type)) {
      for (Op op : {Op::kMatmul, Op::kMatmulSameInput, Op::kMatmulGlu}) {
        EXPECT_TRUE(seen.contains({op, type})) << op_name(op) << " has no rows for " << info->name;
      }
    }
    if (tensor::has_reference_kernels(type)) {
      EXPECT_TRUE(seen.contains({Op::kGetRows, type})) << "get_rows has no rows for " << info->name;
    }
  }
  for (tensor::DType cache : {tensor::DType::F16, tensor::DType::F32, tensor::DType::BF16, tensor::DType::Q8_0,
                              tensor::DType::Q4_0, tensor::DType::FP8_E4M3}) {
    EXPECT_TRUE(is_kv_cache_type(cache));
    for (Op op : {Op::kStoreKv, Op::kKvBlocks, Op::kAttention}) {
      EXPECT_TRUE(seen.contains({op, cache})) << op_name(op) << " has no rows for " << tensor::dtype_name(cache);
    }
  }
}

// A backend without its own moe_ffn refuses it with a sentence naming itself, before touching
// any memory, rather than computing something else.
TEST(ConformanceTable, BackendsWithoutMoeFfnRefuseIt) {
  const Case moe{Op::kMoeFfn, tensor::DType::F32, {256, 256, 9}};
  for (const BackendEntry& entry : backends()) {
    if (!entry.unavailable().empty() || entry.supports(moe)) continue;
    const std::unique_ptr<Backend> backend = entry.make();
    TensorView x, out;
    try {
      backend->moe_ffn(x, {}, 1, Backend::Glu::Swiglu, out);
      ADD_FAILURE() << entry.name << " accepted moe_ffn";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not supported on the " + std::string(backend->name())), std::string::npos)
          << e.what();
    }
  }
}

TEST(ConformanceTable, NamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : all_cases()) EXPECT_TRUE(names.insert(case_name(c)).second) << case_name(c);
}

}  // namespace
}  // namespace lumen::backend::conformance
