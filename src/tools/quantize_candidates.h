#pragma once
// `lumen quantize --report-text`: what each candidate type costs a model in perplexity, so a
// user picks a type from numbers. Each candidate is quantized with the same options into a
// temporary file beside the output (removed afterwards, also on failure), loaded, and run over
// the text by the perplexity code (tools/perplexity.h), exactly as `lumen perplexity` would.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quantize/quantize_model.h"
#include "tools/perplexity.h"

namespace lumen::tools {

struct CandidateResult {
  std::string type;          // the mix's name, or "input" for the unquantized model
  uint64_t file_bytes = 0;   // the quantized file's size
  double bits_per_weight = 0.0;
  Estimate ppl;
  int64_t tokens_scored = 0;
};

// Perplexity of the model at `path` over `text` (already read), as `lumen perplexity -m path`.
CandidateResult measure_model(const std::string& path, const std::string& label, const std::string& text,
                              const PerplexityOptions& options, unsigned threads);

// Each mix in turn: quantized from `input` with `base` options (its mix replaced) into
// `scratch_path`, measured, removed. `on_result` is called after each candidate.
std::vector<CandidateResult> compare_candidates(const std::string& input, const std::vector<quantize::Mix>& mixes,
                                                const quantize::QuantizeOptions& base, const std::string& text,
                                                const PerplexityOptions& options, const std::string& scratch_path,
                                                const std::function<void(const CandidateResult&)>& on_result = {});

}  // namespace lumen::tools
