#pragma once
// `lumen quantize --report`'s output: per converted tensor, its relative RMSE (the error of the
// values read back from the file, relative to the values' RMS), and with --report-text each
// candidate type's size and perplexity; as text tables and as one JSON document.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "quantize/quantize_model.h"
#include "tools/quantize_candidates.h"

namespace lumen::cli {

// The per-tensor table (converted tensors only, in file order) and the overall figure.
std::string render_tensor_errors(const quantize::QuantizeReport& report);
std::string render_candidates(const std::vector<tools::CandidateResult>& candidates);

nlohmann::ordered_json quantize_report_json(const std::string& type, const quantize::QuantizeReport& report,
                                            const std::vector<tools::CandidateResult>& candidates);

}  // namespace lumen::cli
