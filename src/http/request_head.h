#pragma once
// Bounds on a request's head (request line + header fields), checked before cpp-httplib parses
// it: httplib 0.11 reads header lines with no limit on their number, and a request line of any
// length, into memory (a 10 MB header block was accepted).
#include <cstddef>
#include <string_view>

namespace lumen::http {

struct HeadLimits {
  size_t max_bytes = 32 * 1024;      // the whole head, blank line included
  size_t max_lines = 100;            // header fields (the request line not counted)
  size_t max_line_bytes = 8 * 1024;  // any one line, its line end included
};

enum class HeadScan { Incomplete, Complete, TooLarge };

// Where a scan of a growing window stopped, so that the next scan of the same window, grown by
// what arrived since, starts there: a head sent a byte at a time costs linear time, not quadratic.
struct HeadScanState {
  size_t line_start = 0;
  size_t lines = 0;
};

// Whether `window` (the first bytes of a request) holds a complete head within the limits.
// A line is anything up to '\n'; an empty line ("\r\n" or "\n") ends the head.
HeadScan scan_request_head(std::string_view window, const HeadLimits& limits, HeadScanState& state);

inline HeadScan scan_request_head(std::string_view window, const HeadLimits& limits) {
  HeadScanState state;
  return scan_request_head(window, limits, state);
}

}  // namespace lumen::http
