#pragma once
// One check per op: runs a table row on a backend and compares the result with a scalar
// reference, with a tolerance that follows from the op's documented rounding (see each
// check_*.cc). Failures are gtest failures naming the element.
#include <span>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "conformance_case.h"

namespace lumen::backend::conformance {

void check_matmul_ops(Backend& backend, const Case& c);  // check_matmul.cc
void check_get_rows(Backend& backend, const Case& c);    // check_rows.cc
void check_pointwise(Backend& backend, const Case& c);   // check_pointwise.cc
void check_rope(Backend& backend, const Case& c);        // check_rope.cc
void check_kv_ops(Backend& backend, const Case& c);      // check_kv.cc
void check_attention(Backend& backend, const Case& c);   // check_attention.cc
void check_moe_ffn(Backend& backend, const Case& c);     // check_moe.cc
void check_ssm_conv(Backend& backend, const Case& c);    // check_ssm.cc
void check_ssm_scan(Backend& backend, const Case& c);    // check_ssm.cc

// Expects |got[i] - want[i]| <= tol[i] for every i; reports the first few misses and a count.
void expect_close(std::span<const float> got, std::span<const double> want, std::span<const double> tol,
                  std::string_view what);

}  // namespace lumen::backend::conformance
