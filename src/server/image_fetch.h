#pragma once
// Fetching an image part's remote URL (one the operator's --allowed-media-domains allows) with
// libcurl, bounded: http and https only, at most max_bytes of body (refused as soon as a header
// or the data says more), a whole-transfer deadline, and redirects followed only within the
// same host (a redirect elsewhere could lead past the allowed domains), at most a few.
#include <chrono>
#include <cstddef>
#include <string>

namespace lumen::server {

struct ImageFetchLimits {
  size_t max_bytes = size_t{20} << 20;
  std::chrono::milliseconds timeout{10'000};
  int max_redirects = 3;
};

// The body of a 200 response to GET url. ApiError(400) naming what went wrong otherwise: not
// reachable, another status, too large, too slow, a redirect to another host, a Content-Type
// that is not an image.
std::string fetch_image(const std::string& url, const ImageFetchLimits& limits);

}  // namespace lumen::server
