// Feeds arbitrary bytes through everything that loads a model file: the GGUF parser, the
// vocabulary loader, the hyperparameter reader, the inspect report and the importance-matrix
// reader. Any crash, sanitizer
// report, leak or allocation past -malloc_limit_mb is a finding; lumen::Error is the expected
// outcome for bad input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "cli/inspect_report.h"
#include "gguf/file.h"
#include "quantize/imatrix_file.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    lumen::gguf::GgufFile file = lumen::gguf::GgufFile::parse(std::span(data, size), "fuzz");
    auto report = lumen::cli::inspect_report(file);
    (void)report.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    (void)lumen::cli::render_inspect_text(report);
    try {
      (void)lumen::quantize::read_imatrix(file);
    } catch (const lumen::Error&) {
    }
  } catch (const lumen::Error&) {
  }
  return 0;
}
