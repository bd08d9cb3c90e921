#include "proxy/upstream_address.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "http/text.h"
#include "util/error.h"

namespace lumen::proxy {

namespace {

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && http::lower(text.substr(0, prefix.size())) == prefix;
}

bool is_host_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-'; }

}  // namespace

std::string UpstreamAddress::url() const { return fmt::format("http://{}:{}", host, port); }

UpstreamAddress parse_upstream_address(std::string_view url, std::string_view flag) {
  const auto reject = [&](std::string_view why) {
    // Cut a hostile or mistyped argument short; the message only has to show which one it was.
    const std::string_view shown = url.substr(0, 200);
    fail("{} '{}': {} (expected http://host:port)", flag, shown, why);
  };
  constexpr std::string_view scheme = "http://";
  if (starts_with_ignoring_case(url, "https://"))
    reject("https is not supported; the proxy speaks plain HTTP to instances");
  if (!starts_with_ignoring_case(url, scheme)) reject("not an http:// URL");
  std::string_view authority = url.substr(scheme.size());
  if (!authority.empty() && authority.back() == '/') authority.remove_suffix(1);
  if (authority.find_first_of("/?#") != std::string_view::npos) reject("a path, query or fragment is not allowed");
  if (authority.find('@') != std::string_view::npos) reject("credentials are not allowed in the URL");
  if (!authority.empty() && authority.front() == '[') reject("IPv6 literals are not supported; use a host name");
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) reject("the port is missing");
  const std::string_view host = authority.substr(0, colon);
  const std::string_view port_text = authority.substr(colon + 1);
  if (host.empty()) reject("the host is missing");
  if (host.size() > 253 || !std::all_of(host.begin(), host.end(), is_host_name_char)) {
    reject("the host is not a host name or IPv4 address");
  }
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    reject("the port must be a number from 1 to 65535");
  }
  const int port = std::stoi(std::string(port_text));
  if (port < 1 || port > 65535) reject("the port must be a number from 1 to 65535");
  return {http::lower(host), port};
}

}  // namespace lumen::proxy
