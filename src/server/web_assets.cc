#include "server/web_assets.h"

#include "util/error.h"

namespace lumen::server {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string web_path(std::string_view file_name) {
  std::string path = "/";
  if (file_name != "index.html") path += file_name;
  return path;
}

std::string_view web_content_type(std::string_view file_name) {
  if (ends_with(file_name, ".html")) return "text/html; charset=utf-8";
  if (ends_with(file_name, ".js")) return "text/javascript; charset=utf-8";
  if (ends_with(file_name, ".css")) return "text/css; charset=utf-8";
  if (ends_with(file_name, ".svg")) return "image/svg+xml";
  fail("web page file {} has no known content type", file_name);
}

std::optional<WebAsset> find_web_asset(std::string_view path) {
  for (const EmbeddedFile& file : embedded_web_files()) {
    if (web_path(file.name) == path) return WebAsset{web_content_type(file.name), file.bytes};
  }
  return std::nullopt;
}

}  // namespace lumen::server
