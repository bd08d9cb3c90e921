#include "tools/quantize_candidates.h"

#include <filesystem>

#include "lumen/model.h"
#include "util/error.h"

namespace lumen::tools {
namespace {

// Removes the candidate file however its measurement ends.
class ScratchFile {
 public:
  explicit ScratchFile(std::string path) : path_(std::move(path)) {}
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

CandidateResult measure_model(const std::string& path, const std::string& label, const std::string& text,
                              const PerplexityOptions& options, unsigned threads) {
  const Model model = Model::load(path, {.device = "cpu", .threads = threads});
  const std::vector<int32_t> tokens = perplexity_tokens(model, text);
  const PerplexityResult measured = compute_perplexity(model, tokens, options);
  CandidateResult result;
  result.type = label;
  result.file_bytes = std::filesystem::file_size(path);
  result.ppl = measured.ppl;
  result.tokens_scored = measured.tokens_scored;
  return result;
}

std::vector<CandidateResult> compare_candidates(const std::string& input, const std::vector<quantize::Mix>& mixes,
                                                const quantize::QuantizeOptions& base, const std::string& text,
                                                const PerplexityOptions& options, const std::string& scratch_path,
                                                const std::function<void(const CandidateResult&)>& on_result) {
  std::vector<CandidateResult> results;
  for (const quantize::Mix mix : mixes) {
    quantize::QuantizeOptions run = base;
    run.mix = mix;
    run.measure_error = false;
    const ScratchFile scratch(scratch_path);
    const quantize::QuantizeReport report = quantize::quantize_model(input, scratch.path(), run);
    CandidateResult result =
        measure_model(scratch.path(), std::string(quantize::mix_info(mix).name), text, options, base.threads);
    result.bits_per_weight =
        report.elements == 0 ? 0.0 : 8.0 * static_cast<double>(report.bytes_out) / static_cast<double>(report.elements);
    if (on_result) on_result(result);
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace lumen::tools
