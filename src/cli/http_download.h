#pragma once
// HTTP(S) through libcurl: a small bounded GET (the index's JSON) and a file download that
// resumes a `.partial` file with a Range request. Stalls and failures are lumen::Errors; the
// partial file stays, so running again continues where it stopped.
#include <cstdint>
#include <optional>
#include <string>

namespace lumen::cli {

// The body of a GET, refused when it exceeds max_bytes or the status is not 2xx; nullopt for a
// 404 (the caller may have somewhere else to look).
std::optional<std::string> http_get_text(const std::string& url, size_t max_bytes);

// Downloads `url` into `partial_path`, continuing from the bytes already there. `expected_bytes`
// (0 when unknown) bounds the file: more than that is an error. Returns when the file is whole.
void download_resuming(const std::string& url, const std::string& partial_path, uint64_t expected_bytes,
                       const std::string& label);

}  // namespace lumen::cli
