#pragma once
// Where `lumen bench serve` sends its requests: a base URL such as http://127.0.0.1:8080 (or
// one with a path prefix, http://host/api) split into what cpp-httplib's client connects to
// and the prefix put before the endpoint's path.
#include <string>

namespace lumen::benchmark {

struct ServerTarget {
  std::string scheme_host_port;  // "http://127.0.0.1:8080"
  std::string path;              // prefix + endpoint: "/v1/completions"
};

// base_url: http:// or https://, a host, an optional port and path prefix. endpoint: a path
// starting with '/'. Throws lumen::Error for anything else.
ServerTarget parse_server_target(const std::string& base_url, const std::string& endpoint);

}  // namespace lumen::benchmark
