#include "benchmark/server_target.h"

#include "util/error.h"

namespace lumen::benchmark {

ServerTarget parse_server_target(const std::string& base_url, const std::string& endpoint) {
  const size_t scheme_end = base_url.find("://");
  if (scheme_end == std::string::npos) fail("--base-url '{}' needs a scheme (http:// or https://)", base_url);
  const std::string scheme = base_url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") fail("--base-url '{}': only http and https are supported", base_url);
  const size_t host_start = scheme_end + 3;
  const size_t path_start = base_url.find('/', host_start);
  ServerTarget target;
  target.scheme_host_port = base_url.substr(0, path_start);
  if (target.scheme_host_port.size() <= host_start) fail("--base-url '{}' has no host", base_url);
  std::string prefix = path_start == std::string::npos ? "" : base_url.substr(path_start);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (endpoint.empty() || endpoint.front() != '/') fail("--endpoint '{}' must start with '/'", endpoint);
  // The SDKs' base URL ends in /v1 ("http://host:8080/v1") while the endpoint repeats it.
  const std::string v1 = "/v1";
  if (prefix.size() >= v1.size() && prefix.compare(prefix.size() - v1.size(), v1.size(), v1) == 0 &&
      endpoint.rfind(v1 + "/", 0) == 0) {
    prefix.resize(prefix.size() - v1.size());
  }
  target.path = prefix + endpoint;
  return target;
}

}  // namespace lumen::benchmark
