#pragma once
// What the proxy accepts before it reads a request's body: its routes and their methods, the
// framing of a body, and the Host header. A request refused here is answered without its body
// being read (and its connection closed, so the unread body is never parsed as a request).
#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::proxy {

enum class Route { Completions, ChatCompletions, Models, Health, Metrics, Other };
inline constexpr size_t kRouteCount = 6;

// The route of an exact path; Other for any path the proxy does not serve.
Route route_of(std::string_view path);
std::string_view route_path(Route route);    // "/v1/completions"...; "" for Other
std::string_view route_label(Route route);   // the metrics label: the path, or "other"
std::string_view route_method(Route route);  // "POST" or "GET"; "" for Other

struct Refusal {
  int status;
  std::string message;
  std::string code;
};

// Why a request's body is refused before any of it is read, or nothing. Bodies must come with one
// Content-Length of at most `max_body_bytes` and no coding: past the limit is a 413 (httplib
// would read and discard the whole announced length), a Content-Encoding a 415 (httplib would
// inflate it before any size check), a POST without a length or a chunked body a 411 (httplib
// reads chunk-size lines without bound; every OpenAI SDK sends a length), another transfer
// coding a 501, a malformed or repeated length a 400.
std::optional<Refusal> body_refusal(const httplib::Request& request, size_t max_body_bytes);

// Which Host headers are answered, as `lumen serve` does (a DNS-rebinding defence: a web page
// that points its own name at 127.0.0.1 still sends its name as Host). With no list, a proxy
// bound to a loopback address answers only loopback names (localhost, 127.0.0.1, [::1]) and
// one bound elsewhere answers any; with one, exactly those names ("*": any). The port is
// ignored; a request without Host (no browser sends one) passes unless a list excludes it.
class HostRule {
 public:
  HostRule(std::vector<std::string> allowed, std::string_view bound_host);
  bool allows(std::string_view host_header) const;

 private:
  std::vector<std::string> allowed_;  // lower case
  bool loopback_only_;
};

bool is_loopback_name(std::string_view host);

}  // namespace lumen::proxy
