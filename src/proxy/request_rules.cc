#include "proxy/request_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace lumen::proxy {

namespace {

struct RouteEntry {
  Route route;
  std::string_view path;
  std::string_view method;
};

constexpr std::array<RouteEntry, 5> kRoutes = {{
    {Route::Completions, "/v1/completions", "POST"},
    {Route::ChatCompletions, "/v1/chat/completions", "POST"},
    {Route::Models, "/v1/models", "GET"},
    {Route::Health, "/health", "GET"},
    {Route::Metrics, "/metrics", "GET"},
}};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

Route route_of(std::string_view path) {
  for (const RouteEntry& entry : kRoutes) {
    if (entry.path == path) return entry.route;
  }
  return Route::Other;
}

std::string_view route_path(Route route) {
  for (const RouteEntry& entry : kRoutes) {
    if (entry.route == route) return entry.path;
  }
  return "";
}

std::string_view route_label(Route route) { return route == Route::Other ? "other" : route_path(route); }

std::string_view route_method(Route route) {
  for (const RouteEntry& entry : kRoutes) {
    if (entry.route == route) return entry.method;
  }
  return "";
}

std::optional<Refusal> body_refusal(const httplib::Request& request, size_t max_body_bytes) {
  if (request.has_header("Transfer-Encoding")) {
    if (lower(trim(request.get_header_value("Transfer-Encoding"))) == "chunked") {
      return Refusal{411, "send the body with a Content-Length, not chunked", "length_required"};
    }
    return Refusal{501, "transfer codings other than none are not supported", "not_implemented"};
  }
  if (request.has_header("Content-Encoding") &&
      lower(trim(request.get_header_value("Content-Encoding"))) != "identity") {
    return Refusal{415, "compressed request bodies are not supported", "unsupported_media_type"};
  }
  const size_t lengths = request.get_header_value_count("Content-Length");
  if (lengths == 0) {
    if (request.method == "POST") return Refusal{411, "a POST needs a Content-Length", "length_required"};
    return std::nullopt;
  }
  const std::string length_header = request.get_header_value("Content-Length");
  const std::string_view length = trim(length_header);
  if (lengths > 1 || length.empty() || length.size() > 19 ||
      !std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Refusal{400, "the Content-Length is malformed", "invalid_content_length"};
  }
  if (std::stoull(std::string(length)) > max_body_bytes) {
    return Refusal{413, fmt::format("the request body is larger than {} bytes", max_body_bytes), "payload_too_large"};
  }
  return std::nullopt;
}

bool is_loopback_name(std::string_view host) {
  const std::string name = lower(host);
  // 127.0.0.0/8 as digits and dots only: "127.evil.example" is a name anyone can point anywhere.
  const bool loopback_ipv4 = name.starts_with("127.") && std::all_of(name.begin(), name.end(), [](char c) {
                               return (c >= '0' && c <= '9') || c == '.';
                             });
  return name == "localhost" || name == "[::1]" || name == "::1" || loopback_ipv4;
}

HostRule::HostRule(std::vector<std::string> allowed, std::string_view bound_host) : loopback_only_(false) {
  for (const std::string& name : allowed) allowed_.push_back(lower(name));
  loopback_only_ = allowed_.empty() && is_loopback_name(bound_host);
}

bool HostRule::allows(std::string_view host_header) const {
  std::string_view name = trim(host_header);
  // The name without its port: "[::1]:8080" -> "[::1]", "localhost:8080" -> "localhost".
  if (!name.empty() && name.front() == '[') {
    if (const size_t close = name.find(']'); close != std::string_view::npos) name = name.substr(0, close + 1);
  } else if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  const std::string lowered = lower(name);
  const bool any = std::find(allowed_.begin(), allowed_.end(), "*") != allowed_.end();
  if (lowered.empty()) return allowed_.empty() || any;
  if (loopback_only_) return is_loopback_name(lowered);
  return allowed_.empty() || any || std::find(allowed_.begin(), allowed_.end(), lowered) != allowed_.end();
}

}  // namespace lumen::proxy
