#include "server/image_fetch.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <string_view>

#include "server/api_error.h"

namespace lumen::server {

namespace {

struct Body {
  std::string data;
  size_t max_bytes = 0;
  bool too_large = false;
};

size_t keep_bounded(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t bytes = size * n;
  if (body->data.size() + bytes > body->max_bytes) {
    body->too_large = true;
    return 0;  // ends the transfer (CURLE_WRITE_ERROR)
  }
  body->data.append(data, bytes);
  return bytes;
}

// The lowercase host of a URL as libcurl parses it; empty when it cannot.
std::string host_of(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> parsed(curl_url(), curl_url_cleanup);
  char* host = nullptr;
  if (!parsed || curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK ||
      curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0) != CURLUE_OK) {
    return {};
  }
  std::string out(host);
  curl_free(host);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string fetch_image(const std::string& url, const ImageFetchLimits& limits) {
  // Once per process, before any handle: curl_easy_init would do it unsynchronised.
  static const bool curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!curl_ready) throw ApiError(500, "could not start libcurl to fetch an image");
  const std::string host = host_of(url);
  if (host.empty()) invalid("messages", "an image URL does not parse");
  std::string at = url;
  for (int redirects = 0;; ++redirects) {
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) throw ApiError(500, "could not start fetching an image");
    Body body{{}, limits.max_bytes, false};
    CURL* h = curl.get();
    curl_easy_setopt(h, CURLOPT_URL, at.c_str());
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // followed below, host checked
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(limits.timeout.count()));
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_bytes));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "lumen-serve");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_bounded);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    const CURLcode result = curl_easy_perform(h);
    if (body.too_large || result == CURLE_FILESIZE_EXCEEDED) {
      invalid("messages", "a remote image is larger than the server's limit of {} bytes (--max-image-bytes)",
              limits.max_bytes);
    }
    if (result == CURLE_OPERATION_TIMEDOUT) {
      invalid("messages", "fetching a remote image took longer than {} ms", limits.timeout.count());
    }
    if (result != CURLE_OK) invalid("messages", "a remote image could not be fetched: {}", curl_easy_strerror(result));
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400) {
      char* next = nullptr;
      curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &next);
      if (next == nullptr || host_of(next) != host) {
        invalid("messages", "a remote image URL redirects to another host, which is not followed");
      }
      if (redirects >= limits.max_redirects) invalid("messages", "a remote image URL redirects too many times");
      at = next;
      continue;
    }
    if (status != 200) invalid("messages", "a remote image could not be fetched: HTTP status {}", status);
    char* type = nullptr;
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &type);
    if (type != nullptr && std::string_view(type).substr(0, 6) != "image/") {
      invalid("messages", "a remote image URL answered with Content-Type {}, not an image",
              std::string(type).substr(0, 60));
    }
    return std::move(body.data);
  }
}

}  // namespace lumen::server
