#include "http/request_head.h"

namespace lumen::http {

HeadScan scan_request_head(std::string_view window, const HeadLimits& limits, HeadScanState& state) {
  while (state.line_start < window.size()) {
    const size_t start = state.line_start;
    const size_t newline = window.find('\n', start);
    const size_t end = newline == std::string_view::npos ? window.size() : newline + 1;
    if (end - start > limits.max_line_bytes || end > limits.max_bytes) return HeadScan::TooLarge;
    if (newline == std::string_view::npos) return HeadScan::Incomplete;
    const std::string_view line = window.substr(start, end - start);
    if (line == "\r\n" || line == "\n") return HeadScan::Complete;
    if (++state.lines > limits.max_lines + 1) return HeadScan::TooLarge;  // + the request line
    state.line_start = end;
  }
  return HeadScan::Incomplete;
}

}  // namespace lumen::http
