#include "server/image_parts.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "server/api_error.h"
#include "util/error.h"

namespace lumen::server {

namespace {

// The media types the image decoders read (docs/vision.md).
constexpr std::array<std::string_view, 4> kImageTypes = {"image/png", "image/jpeg", "image/webp", "image/gif"};

bool is_base64_char(unsigned char c) { return std::isalnum(c) != 0 || c == '+' || c == '/'; }

// Strict RFC 4648 base64 (padded, no whitespace), at most max_bytes once decoded; the length is
// checked before a byte is decoded.
std::string decode_base64(std::string_view text, size_t max_bytes) {
  if (text.size() / 4 * 3 > max_bytes + 2) {
    invalid("messages", "an image is larger than the server's limit of {} bytes (--max-image-bytes)", max_bytes);
  }
  if (text.empty() || text.size() % 4 != 0) {
    invalid("messages", "an image's base64 data is not valid base64 (its length is not a multiple of 4)");
  }
  const size_t padding = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
  const std::string_view body = text.substr(0, text.size() - padding);
  if (!std::all_of(body.begin(), body.end(), [](char c) { return is_base64_char(static_cast<unsigned char>(c)); })) {
    invalid("messages", "an image's base64 data is not valid base64 (a character outside A-Z a-z 0-9 + /)");
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) invalid("messages", "an image's base64 data is not valid base64");
  out.resize(static_cast<size_t>(n) - padding);  // EVP_DecodeBlock counts the padding as zero bytes
  if (out.size() > max_bytes) {
    invalid("messages", "an image is larger than the server's limit of {} bytes (--max-image-bytes)", max_bytes);
  }
  return out;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The host of an http(s) URL (lowercase, without port or user info), or empty when it has none.
std::string url_host(std::string_view url) {
  const size_t scheme_end = url.find("://");
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (rest.find('@') != std::string_view::npos) return {};  // user info: refused, never guessed at
  if (rest.starts_with('[')) return {};                     // IP literals are not domains
  return lowercase(rest.substr(0, rest.find(':')));
}

}  // namespace

ImagePart parse_image_part(const nlohmann::json& part, const ImageLimits& limits) {
  const auto image = part.find("image_url");
  if (image == part.end() || !image->is_object() || !image->contains("url") || !(*image)["url"].is_string()) {
    invalid("messages", "an image part must be {{\"type\": \"image_url\", \"image_url\": {{\"url\": ...}}}}");
  }
  if (const auto detail = image->find("detail"); detail != image->end() && !detail->is_null()) {
    if (!detail->is_string() || (*detail != "auto" && *detail != "low" && *detail != "high")) {
      invalid("messages", "an image's 'detail' must be \"auto\", \"low\" or \"high\"");
    }
  }
  const std::string& url = (*image)["url"].get_ref<const std::string&>();
  ImagePart out;
  const std::string scheme = lowercase(std::string_view(url).substr(0, std::min<size_t>(url.size(), 8)));
  if (scheme.starts_with("data:")) {
    const size_t comma = url.find(',');
    if (comma == std::string::npos) invalid("messages", "an image's data: URL has no data");
    const std::string header = lowercase(std::string_view(url).substr(5, comma - 5));
    if (!header.ends_with(";base64"))
      invalid("messages", "an image's data: URL must be base64 (data:image/png;base64,...)");
    out.media_type = header.substr(0, header.size() - 7);
    if (std::find(kImageTypes.begin(), kImageTypes.end(), out.media_type) == kImageTypes.end()) {
      invalid("messages", "images must be image/png, image/jpeg, image/webp or image/gif (got \"{}\")",
              out.media_type.substr(0, 40));
    }
    out.bytes = decode_base64(std::string_view(url).substr(comma + 1), limits.max_image_bytes);
    return out;
  }
  if (scheme.starts_with("http://") || scheme.starts_with("https://")) {
    const std::string host = url_host(url);
    if (host.empty() || !media_domain_allowed(host, limits.allowed_media_domains)) {
      invalid("messages",
              "image URLs are fetched only from the domains the server's operator allows (--allowed-media-domains); "
              "send the image as a data: URL (data:image/png;base64,...)");
    }
    out.remote_url = url;
    return out;
  }
  invalid("messages", "an image's url must be a data: URL (data:image/png;base64,...) or an http(s) URL");
}

std::vector<std::string> parse_media_domains(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string entry = lowercase(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    if (entry.empty()) continue;
    const bool host_chars = std::all_of(entry.begin(), entry.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.';
    });
    if (!host_chars || entry.front() == '.' || entry.back() == '.') {
      fail("--allowed-media-domains: \"{}\" is not a domain name", entry);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

bool media_domain_allowed(std::string_view host, const std::vector<std::string>& domains) {
  return std::any_of(domains.begin(), domains.end(), [&](const std::string& d) {
    return host == d || (host.size() > d.size() && host.ends_with(d) && host[host.size() - d.size() - 1] == '.');
  });
}

}  // namespace lumen::server
