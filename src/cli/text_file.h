#pragma once
// A text file a command reads whole (`run -f`, `perplexity -f`): its exact bytes, with one-line
// errors that name the file by its role ("the prompt file 'x' is a directory").
#include <string>

namespace lumen::cli {

// Far more than any context holds: a bound so that `-f /dev/zero` or a mistaken multi-gigabyte
// file is an error, not an exhausted machine. Pipes (`-f /dev/stdin`) still work.
constexpr size_t kMaxTextFileBytes = 64u << 20;

// `role` names the file in errors: "prompt file", "text file". A file larger than `max_bytes`
// (whole MiB) is an error once that much is read: an image file is held to the image decoder's
// own limit before any of it is decoded.
std::string read_text_file(const std::string& path, const std::string& role, size_t max_bytes = kMaxTextFileBytes);

}  // namespace lumen::cli
