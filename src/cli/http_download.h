#pragma once
// HTTP(S) through libcurl: a small bounded GET (the index's JSON) and a file download that
// resumes a `.partial` file with a Range request, never past a bound the caller sets. Stalls and
// failures are lumen::Errors; after a dropped connection the partial file stays, so running again
// continues where it stopped.
#include <cstdint>
#include <optional>
#include <string>

#include "lumen/error.h"

namespace lumen::cli {

// The body of a GET, refused when it exceeds max_bytes or the status is not 2xx; nullopt for a
// 404 (the caller may have somewhere else to look). A server that cannot be reached or answers
// another error is a DownloadInterrupted (declared below): running again may get past it.
std::optional<std::string> http_get_text(const std::string& url, size_t max_bytes);

// A download that stopped for a reason a later run may get past (the connection dropped or
// stalled, the server answered an error): the partial file stays, within its bound, so that
// running the same command again resumes it. Every other failure of download_resuming() (a body
// past the bound, a range that does not continue the file, a disk error) is a plain lumen::Error.
class DownloadInterrupted : public Error {
 public:
  using Error::Error;
};

// Downloads `url` into `partial_path`, continuing from the bytes already there. The file never
// holds more than `max_bytes`, whatever the server announces or sends: a larger Content-Length is
// refused before any byte is written, a longer body stops at the bound. `expected_bytes` (0 when
// unknown) is the size the index states; it must not exceed `max_bytes`. A partial file already
// past the bound is removed first. Returns when the file is whole.
void download_resuming(const std::string& url, const std::string& partial_path, uint64_t expected_bytes,
                       uint64_t max_bytes, const std::string& label);

}  // namespace lumen::cli
