#pragma once
// What the proxy sends to an instance for a client's request: the client's body as it came, and
// only the headers named here. The list is built up from nothing rather than copied from the
// client and filtered, so no client header reaches an instance unless it is listed: above all
// not X-Lumen-KV-Transfer, which would let a client point a decode instance at any K/V source
// (only a prefill instance's answer provides it).
#include <httplib.h>

#include <optional>
#include <string>
#include <string_view>

namespace lumen::proxy {

inline constexpr std::string_view kKvTransferHeader = "X-Lumen-KV-Transfer";

struct ForwardedHeaders {
  std::string authorization;               // the client's, passed through (empty: none)
  std::string request_id;                  // the proxy's own, the same on every hop
  std::optional<std::string> kv_transfer;  // from the prefill's answer; to the decode only
};

// A POST of `body` to `path` with Content-Type application/json and the headers above.
httplib::Request upstream_post(std::string_view path, const std::string& body, const ForwardedHeaders& headers);
// A GET of `path` with the headers above (for /v1/models).
httplib::Request upstream_get(std::string_view path, const ForwardedHeaders& headers);

// Whether `value` may be written into a header as it is: printable ASCII and inner spaces or
// tabs only (no CR or LF to split it into two headers), at most `max_bytes`.
bool is_plain_header_value(std::string_view value, size_t max_bytes = 8192);

// The headers a client's request passes on: its Authorization (when it is a plain value), and a
// fresh request id, also set on the client's response.
ForwardedHeaders forwarded_headers(const httplib::Request& request, httplib::Response& response);

// A fresh id for one client request ("proxy-" and 16 hex digits), sent upstream as X-Request-Id
// and back to the client, so the request can be followed through the instances' logs.
std::string new_request_id();

}  // namespace lumen::proxy
