#include "cli/pypi_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace lumen::cli {

namespace {

// Project names and versions go into a URL path: only the characters PyPI allows in them.
bool is_safe_path_segment(const std::string& text) {
  return !text.empty() && text.size() <= 200 && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == '+' || c == '!';
  });
}

std::string lowercase_hex_or_empty(const nlohmann::json& value) {
  if (!value.is_string()) return "";
  std::string text = value.get<std::string>();
  if (text.size() != 64) return "";
  for (char& c : text) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return text;
}

bool is_http_url(const std::string& url) { return url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0; }

}  // namespace

std::string pypi_index_url() {
  std::string index = "https://pypi.org";
  if (const char* env = std::getenv("LUMEN_PYPI_URL"); env != nullptr && *env != '\0') index = env;
  while (!index.empty() && index.back() == '/') index.pop_back();
  return index;
}

std::string pypi_release_json_url(const std::string& index, const std::string& project, const std::string& version) {
  if (!is_safe_path_segment(project) || !is_safe_path_segment(version)) {
    fail("'{}' version '{}' is not a valid package name and version", project, version);
  }
  return fmt::format("{}/pypi/{}/{}/json", index, project, version);
}

std::string pypi_project_json_url(const std::string& index, const std::string& project) {
  if (!is_safe_path_segment(project)) fail("'{}' is not a valid package name", project);
  return fmt::format("{}/pypi/{}/json", index, project);
}

WheelFile parse_pypi_release(const std::string& json_text, const std::string& project, const std::string& version,
                             bool whole_project) {
  const std::string what = fmt::format("the package index's answer for {}=={}", project, version);
  const nlohmann::json root = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) fail("{} is not valid JSON", what);
  if (!root.is_object()) fail("{} is not a JSON object", what);
  const nlohmann::json* files = nullptr;
  if (whole_project) {
    auto releases = root.find("releases");
    if (releases == root.end() || !releases->is_object() || !releases->contains(version) ||
        !(*releases)[version].is_array()) {
      fail("{} has no release {}", what, version);
    }
    files = &(*releases)[version];
  } else {
    if (!root.contains("urls") || !root["urls"].is_array()) fail("{} has no \"urls\" list", what);
    files = &root["urls"];
  }
  for (const nlohmann::json& file : *files) {
    if (!file.is_object()) continue;
    auto type = file.find("packagetype");
    auto url = file.find("url");
    auto filename = file.find("filename");
    auto digests = file.find("digests");
    if (type == file.end() || !type->is_string() || type->get<std::string>() != "bdist_wheel") continue;
    if (url == file.end() || !url->is_string() || !is_http_url(url->get<std::string>())) continue;
    WheelFile wheel;
    wheel.url = url->get<std::string>();
    wheel.filename = filename != file.end() && filename->is_string() ? filename->get<std::string>() : "";
    if (digests == file.end() || !digests->is_object() || !digests->contains("sha256")) {
      fail("{} gives no sha256 for {}", what, wheel.url);
    }
    wheel.sha256 = lowercase_hex_or_empty((*digests)["sha256"]);
    if (wheel.sha256.empty()) fail("{} gives a malformed sha256 for {}", what, wheel.url);
    // A size is what a download is checked against: one that is there but not a byte count
    // (negative, fractional, text) is a broken or hostile answer, not a missing size.
    if (auto size = file.find("size"); size != file.end() && !size->is_null()) {
      if (!size->is_number_unsigned()) fail("{} gives a malformed size for {}", what, wheel.url);
      wheel.bytes = size->get<uint64_t>();
    }
    return wheel;
  }
  fail("{} lists no wheel (a \"bdist_wheel\" file with an http(s) URL)", what);
}

}  // namespace lumen::cli
