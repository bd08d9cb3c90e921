#include "http/http_policy.h"

#include <algorithm>

#include "http/text.h"

namespace lumen::http {

std::string media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';'))));
}

bool acceptable_body_type(std::string_view content_type) {
  const std::string type = media_type(content_type);
  return type.empty() || type == "application/json";
}

std::optional<BodyRefusal> body_refusal(const BodyFraming& framing, size_t max_body_bytes) {
  if (framing.has_transfer_encoding) {
    if (lower(trim(framing.transfer_encoding)) == "chunked") {
      return BodyRefusal{411, "send the request body with a Content-Length header (chunked bodies are not accepted)",
                         "length_required"};
    }
    return BodyRefusal{501, "transfer codings other than chunked are not supported", "not_implemented"};
  }
  const std::string coding = lower(trim(framing.content_encoding));
  if (!coding.empty() && coding != "identity") {
    return BodyRefusal{415, "compressed request bodies (Content-Encoding) are not accepted; send plain JSON",
                       "unsupported_media_type"};
  }
  if (framing.content_length_count == 0) {
    if (framing.method == "POST") return BodyRefusal{411, "a POST needs a Content-Length header", "length_required"};
    return std::nullopt;
  }
  const std::string_view length = trim(framing.content_length);
  const bool digits = !length.empty() && length.size() <= 19 &&
                      std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (framing.content_length_count > 1 || !digits) {
    return BodyRefusal{400, "the Content-Length header is malformed or repeated", "invalid_content_length"};
  }
  if (std::stoull(std::string(length)) > max_body_bytes) {
    return BodyRefusal{413, "the request body is too large (--max-body-size)", "payload_too_large"};
  }
  return std::nullopt;
}

std::optional<std::string> bearer_token(std::string_view authorization) {
  authorization = trim(authorization);
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos || lower(authorization.substr(0, space)) != "bearer") return std::nullopt;
  const std::string_view token = trim(authorization.substr(space + 1));
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

bool same_secret(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

bool carries_api_key(std::string_view authorization, const std::vector<std::string>& keys) {
  const std::optional<std::string> token = bearer_token(authorization);
  bool known = false;
  for (const std::string& key : keys) known = (token && same_secret(*token, key)) || known;
  return known;
}

std::vector<std::string> HostPolicy::parse_list(std::string_view comma_separated) {
  std::vector<std::string> items;
  while (!comma_separated.empty()) {
    const size_t comma = comma_separated.find(',');
    const std::string_view item = trim(comma_separated.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    comma_separated.remove_prefix(comma + 1);
  }
  return items;
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // An IPv4 address in 127.0.0.0/8: four dot-separated numbers, the first 127 (not a name
  // that merely starts with "127.", such as 127.0.0.1.evil.example).
  if (host.rfind("127.", 0) != 0) return false;
  int parts = 1, digits = 0;
  for (char c : host) {
    if (c == '.') {
      if (digits == 0) return false;
      ++parts;
      digits = 0;
    } else if (c >= '0' && c <= '9' && digits < 3) {
      ++digits;
    } else {
      return false;
    }
  }
  return parts == 4 && digits > 0;
}

bool HostPolicy::allows(std::string_view host_header) const {
  host_header = trim(host_header);
  // The name without the port: "[::1]:8080" -> "[::1]", "localhost:8080" -> "localhost".
  std::string_view name = host_header;
  if (!name.empty() && name.front() == '[') {
    const size_t close = name.find(']');
    if (close != std::string_view::npos) name = name.substr(0, close + 1);
  } else if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  const std::string lowered = lower(name);
  // No Host at all (HTTP/1.0, raw tools) is no browser: rebinding needs a name to rebind.
  if (lowered.empty()) return allowed_.empty() || allowed_ == std::vector<std::string>{"*"};
  if (loopback_only_) return is_loopback_host(lowered);
  if (allowed_.empty()) return true;
  for (const std::string& allowed : allowed_) {
    if (allowed == "*" || lower(allowed) == lowered) return true;
  }
  return false;
}

CorsPolicy CorsPolicy::parse(std::string_view comma_separated) {
  return CorsPolicy(HostPolicy::parse_list(comma_separated));
}

std::optional<std::string> CorsPolicy::allow_origin(std::string_view origin) const {
  if (origin.empty()) return std::nullopt;
  for (const std::string& allowed : origins_) {
    if (allowed == "*") return std::string("*");
    if (allowed == origin) return std::string(origin);
  }
  return std::nullopt;
}

}  // namespace lumen::http
