#include "cli/quantize_report.h"

#include <fmt/format.h>

#include "cli/byte_units.h"

namespace lumen::cli {
namespace {

bool converted(const quantize::TensorPlanEntry& entry) { return entry.from != entry.to; }

// Every converted tensor's error together: sqrt(sum of squared errors / sum of squared values).
quantize::TensorError overall(const quantize::QuantizeReport& report) {
  quantize::TensorError total;
  for (size_t i = 0; i < report.errors.size(); ++i) {
    if (!converted(report.plan.tensors[i])) continue;
    total.squared_error += report.errors[i].squared_error;
    total.squared_value += report.errors[i].squared_value;
    total.elements += report.errors[i].elements;
  }
  return total;
}

}  // namespace

std::string render_tensor_errors(const quantize::QuantizeReport& report) {
  std::string out = fmt::format("{:<36} {:<6} {:<6} {:>12} {:>14}\n", "tensor", "from", "to", "elements", "relative RMSE");
  for (size_t i = 0; i < report.errors.size(); ++i) {
    const quantize::TensorPlanEntry& entry = report.plan.tensors[i];
    if (!converted(entry)) continue;
    out += fmt::format("{:<36} {:<6} {:<6} {:>12} {:>14.6f}\n", entry.name, tensor::dtype_name(entry.from),
                       tensor::dtype_name(entry.to), report.errors[i].elements, report.errors[i].relative_rmse());
  }
  const quantize::TensorError total = overall(report);
  out += fmt::format("{:<36} {:<6} {:<6} {:>12} {:>14.6f}\n", "all converted tensors", "", "", total.elements,
                     total.relative_rmse());
  return out;
}

std::string render_candidates(const std::vector<tools::CandidateResult>& candidates) {
  std::string out = fmt::format("{:<8} {:>10} {:>6} {:>22}\n", "type", "size MiB", "bpw", "PPL");
  for (const tools::CandidateResult& c : candidates) {
    const std::string bpw = c.bits_per_weight > 0 ? fmt::format("{:.2f}", c.bits_per_weight) : "-";
    out += fmt::format("{:<8} {:>10.2f} {:>6} {:>12.4f} +/- {:.4f}\n", c.type, mib(c.file_bytes), bpw, c.ppl.value,
                       c.ppl.error);
  }
  return out;
}

nlohmann::ordered_json quantize_report_json(const std::string& type, const quantize::QuantizeReport& report,
                                            const std::vector<tools::CandidateResult>& candidates) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (size_t i = 0; i < report.errors.size(); ++i) {
    const quantize::TensorPlanEntry& entry = report.plan.tensors[i];
    if (!converted(entry)) continue;
    tensors.push_back({{"name", entry.name},
                       {"from", tensor::dtype_name(entry.from)},
                       {"to", tensor::dtype_name(entry.to)},
                       {"elements", report.errors[i].elements},
                       {"relative_rmse", report.errors[i].relative_rmse()}});
  }
  nlohmann::ordered_json json = {{"type", type},
                                 {"bytes_in", report.bytes_in},
                                 {"bytes_out", report.bytes_out},
                                 {"relative_rmse", overall(report).relative_rmse()},
                                 {"tensors", tensors}};
  if (!candidates.empty()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const tools::CandidateResult& c : candidates) {
      list.push_back({{"type", c.type},
                      {"file_bytes", c.file_bytes},
                      {"bits_per_weight", c.bits_per_weight},
                      {"ppl", c.ppl.value},
                      {"ppl_error", c.ppl.error},
                      {"tokens_scored", c.tokens_scored}});
    }
    json["candidates"] = list;
  }
  return json;
}

}  // namespace lumen::cli
