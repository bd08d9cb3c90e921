#pragma once
// The parts of resuming an HTTP download that are pure logic, kept apart so they can be tested
// without a server: what a Content-Range header says, and what to do with the bytes that follow.
#include <cstdint>
#include <optional>
#include <string_view>

namespace lumen::cli {

struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;                 // inclusive
  std::optional<uint64_t> total;     // absent for "*"
};

// "bytes 100-199/1000" (case-insensitive unit, spaces tolerated); nullopt when malformed.
std::optional<ContentRange> parse_content_range(std::string_view value);

enum class ResumeAction {
  kAppend,   // 206 starting where the partial file ends: add to it
  kRestart,  // 200: the server sent the whole file (it ignored the Range): start over
  kReject,   // anything else: a range that does not continue the file, or an odd status
};

// What to do with a response body, given the status, its Content-Range (if any) and how many
// bytes the partial file already holds (the Range asked for "bytes=<have>-").
ResumeAction resume_action(long status, const std::optional<ContentRange>& range, uint64_t have);

}  // namespace lumen::cli
