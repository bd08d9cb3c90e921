#pragma once
// OpenAI chat content parts that carry images: {"type": "image_url", "image_url": {"url": ...,
// "detail": ...}}. Checked and bounded before anything is decoded: how many a request may hold,
// the base64 payload's size (before decoding it), the media types of data: URLs, and remote
// http(s) URLs only from the domains the operator allows.
#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::server {

struct ImageLimits {
  size_t max_image_bytes = size_t{20} << 20;  // an image file's bytes (decoded)
  size_t max_images_per_request = 8;
  // Hosts that image URLs may name (exactly, or as a parent domain: "example.com" allows
  // "cdn.example.com"); empty: remote URLs are refused.
  std::vector<std::string> allowed_media_domains;
  std::chrono::milliseconds fetch_timeout{10'000};  // a remote image's whole transfer
};

// One image of a request: its file's bytes (a data: URL decoded), or the remote URL to fetch.
struct ImagePart {
  std::string media_type;  // "image/png"... (data: URLs)
  std::string bytes;
  std::string remote_url;  // an allowed http(s) URL, not fetched yet
};

// Reads an "image_url" content part (ApiError 400 for anything malformed or out of bounds).
ImagePart parse_image_part(const nlohmann::json& part, const ImageLimits& limits);

// "a.com,b.org" as the list ImageLimits wants (lowercase, no empty entries); lumen::Error for an
// entry that is not a host name.
std::vector<std::string> parse_media_domains(std::string_view list);

// Whether `host` is one of `domains` or under one of them.
bool media_domain_allowed(std::string_view host, const std::vector<std::string>& domains);

}  // namespace lumen::server
