#pragma once
// Where an instance behind the proxy listens. The proxy speaks plain HTTP/1.1 to instances on
// its own network, so an address is exactly `http://host:port` (one trailing slash allowed):
// no path it would silently drop, no credentials that would end up in metrics and messages, no
// https it cannot speak, and no IPv6 literal (cpp-httplib 0.11.4's client would write it into
// the Host header without brackets).
#include <string>
#include <string_view>

namespace lumen::proxy {

struct UpstreamAddress {
  std::string host;  // a DNS name or an IPv4 address, lower case
  int port = 0;

  std::string url() const;  // "http://host:port", as metrics and messages show it
};

// Throws lumen::Error naming `flag` ("--decode"), the URL and what is wrong with it.
UpstreamAddress parse_upstream_address(std::string_view url, std::string_view flag);

}  // namespace lumen::proxy
