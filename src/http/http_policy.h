#pragma once
// The rules `lumen serve` (and the proxy of `--role proxy`) applies to every HTTP request before a
// route sees it, kept apart from the routes and from cpp-httplib so each is a pure function with
// its own tests: which media types a POST body may have, how the Authorization header is read,
// which Host names are answered, and CORS. Which paths exist, their methods and which need the
// key are the route table's (route_table.h).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::http {

// The media type of a Content-Type value, lower-cased, without parameters: "application/json"
// for "Application/JSON; charset=utf-8". Empty for an empty header.
std::string media_type(std::string_view content_type);

// Whether a POST body with this Content-Type is read as JSON: application/json, or no
// Content-Type at all (simple clients omit it). Anything else (form encoding, text/plain,
// multipart) is a 415.
bool acceptable_body_type(std::string_view content_type);

// What a request's headers say about its body, for body_refusal().
struct BodyFraming {
  std::string_view method;
  size_t content_length_count = 0;  // Content-Length headers sent (more than one is refused)
  std::string_view content_length;
  bool has_transfer_encoding = false;
  std::string_view transfer_encoding;
  std::string_view content_encoding;  // empty when absent
};

// Why a body is refused before any of it is read, in HTTP terms; or nothing. Lumen takes
// bodies with a Content-Length of at most `max_body_bytes` and no coding: 413 past the limit,
// 415 for a Content-Encoding (a compressed body could grow far past the limit; httplib would
// inflate it), 411 for a POST with no length or a chunked one (httplib reads chunk-size lines
// without a bound, so a chunked body's cost could not be bounded; every OpenAI SDK sends a
// Content-Length), 501 for another transfer coding, 400 for a malformed or repeated length.
struct BodyRefusal {
  int status;
  std::string message;
  std::string code;
};
std::optional<BodyRefusal> body_refusal(const BodyFraming& framing, size_t max_body_bytes);

// The token of an "Authorization: Bearer TOKEN" header; the scheme is case-insensitive (RFC 9110)
// and spaces around the token are ignored. Nothing for another scheme or a missing token.
std::optional<std::string> bearer_token(std::string_view authorization);

// Equality whose time does not depend on where the strings differ (the length is no secret).
bool same_secret(std::string_view given, std::string_view key);

// Whether an Authorization header carries one of `keys` as its Bearer token. Every key is
// compared, each in constant time, so the answer's timing says nothing about which one was close.
bool carries_api_key(std::string_view authorization, const std::vector<std::string>& keys);

// Which Host headers the server answers (a DNS-rebinding defence: a web page that points its own
// name at 127.0.0.1 still sends its name as Host). Empty list: a server bound to a loopback
// address answers only loopback names (localhost, 127.0.0.1, [::1]); one bound elsewhere
// answers any. Otherwise exactly the listed host names ("*" for any); the port is ignored. A
// request with no Host header (HTTP/1.0, raw tools; no browser sends one) passes the default.
class HostPolicy {
 public:
  HostPolicy() = default;
  HostPolicy(std::vector<std::string> allowed, bool bound_to_loopback)
      : allowed_(std::move(allowed)), loopback_only_(allowed_.empty() && bound_to_loopback) {}
  // "a,b,c" as given on the command line.
  static std::vector<std::string> parse_list(std::string_view comma_separated);
  bool allows(std::string_view host_header) const;

 private:
  std::vector<std::string> allowed_;
  bool loopback_only_ = false;
};

// Whether an address to listen on is a loopback address.
bool is_loopback_host(std::string_view host);

// CORS: which browser origins may call the server. Empty: none (no CORS headers at all);
// "*" allows any origin; otherwise exact origins ("http://localhost:3000").
class CorsPolicy {
 public:
  CorsPolicy() = default;
  explicit CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {}
  // "a,b,c" as given on the command line.
  static CorsPolicy parse(std::string_view comma_separated);
  bool enabled() const { return !origins_.empty(); }
  // The Access-Control-Allow-Origin value for a request from `origin`; nothing when not allowed.
  std::optional<std::string> allow_origin(std::string_view origin) const;

 private:
  std::vector<std::string> origins_;
};

}  // namespace lumen::http
