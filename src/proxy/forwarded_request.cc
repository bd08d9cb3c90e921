#include "proxy/forwarded_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <random>

namespace lumen::proxy {

namespace {

httplib::Headers forwarded(const ForwardedHeaders& headers) {
  httplib::Headers out;
  if (!headers.authorization.empty()) out.emplace("Authorization", headers.authorization);
  out.emplace("X-Request-Id", headers.request_id);
  if (headers.kv_transfer) out.emplace(std::string(kKvTransferHeader), *headers.kv_transfer);
  return out;
}

}  // namespace

httplib::Request upstream_post(std::string_view path, const std::string& body, const ForwardedHeaders& headers) {
  httplib::Request request;
  request.method = "POST";
  request.path = std::string(path);
  request.headers = forwarded(headers);
  request.headers.emplace("Content-Type", "application/json");
  request.body = body;
  return request;
}

httplib::Request upstream_get(std::string_view path, const ForwardedHeaders& headers) {
  httplib::Request request;
  request.method = "GET";
  request.path = std::string(path);
  request.headers = forwarded(headers);
  return request;
}

bool is_plain_header_value(std::string_view value, size_t max_bytes) {
  if (value.empty() || value.size() > max_bytes) return false;
  if (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' || value.back() == '\t') return false;
  return std::all_of(value.begin(), value.end(), [](char c) { return (c >= 0x20 && c <= 0x7e) || c == '\t'; });
}

std::string new_request_id() {
  // Unpredictable enough that ids from different proxies and restarts do not collide; not a
  // secret (clients see their own).
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return fmt::format("proxy-{:016x}", static_cast<uint64_t>(generator()));
}

ForwardedHeaders forwarded_headers(const httplib::Request& request, httplib::Response& response) {
  ForwardedHeaders headers;
  // httplib's parser already refuses CR and LF in a header; the check keeps it that way here.
  if (const std::string authorization = request.get_header_value("Authorization");
      is_plain_header_value(authorization)) {
    headers.authorization = authorization;
  }
  headers.request_id = new_request_id();
  response.set_header("X-Request-Id", headers.request_id);
  return headers;
}

}  // namespace lumen::proxy
