#include "conformance_case.h"

#include <fmt/format.h>

namespace lumen::backend::conformance {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kMatmul: return "matmul";
    case Op::kMatmulSameInput: return "matmul_same_input";
    case Op::kMatmulGlu: return "matmul_glu";
    case Op::kGetRows: return "get_rows";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kAdd: return "add";
    case Op::kAddRow: return "add_row";
    case Op::kScale: return "scale";
    case Op::kSwiglu: return "swiglu";
    case Op::kGeglu: return "geglu";
    case Op::kRope: return "rope";
    case Op::kStoreKv: return "store_kv";
    case Op::kKvBlocks: return "kv_blocks";
    case Op::kAttention: return "attention";
    case Op::kMoeFfn: return "moe_ffn";
    case Op::kSsmConv: return "ssm_conv";
    case Op::kSsmScan: return "ssm_scan";
  }
  return "unknown";
}

namespace {

std::string_view mode_name(const Case& c) {
  static constexpr std::string_view kRope[] = {"normal", "neox", "partial", "linear", "yarn", "freq_factors"};
  static constexpr std::string_view kAttention[] = {"causal", "window",     "softcap", "alibi",       "latent",
                                                    "span",   "alibi_span", "sinks",   "window_sinks"};
  static constexpr std::string_view kGlu[] = {"swiglu", "geglu"};
  switch (c.op) {
    case Op::kRope: return kRope[c.mode];
    case Op::kAttention: return kAttention[c.mode];
    case Op::kMatmulGlu: return kGlu[c.mode];
    case Op::kMoeFfn: return c.mode == 1 ? "gpt_oss" : "";
    default: return "";
  }
}

}  // namespace

std::string case_name(const Case& c) {
  std::string name =
      fmt::format("{}_{}_{}x{}x{}", op_name(c.op), tensor::dtype_name(c.type), c.shape[0], c.shape[1], c.shape[2]);
  if (const std::string_view mode = mode_name(c); !mode.empty()) name += fmt::format("_{}", mode);
  return name;
}

}  // namespace lumen::backend::conformance
