#pragma once
// Finding a wheel on a PyPI-style index: the JSON API's answer for one release
// (<index>/pypi/<project>/<version>/json) names its files, their URLs and sha256 digests.
// The answer is untrusted: anything missing or of the wrong type is an error, never a crash.
#include <cstdint>
#include <string>

namespace lumen::cli {

struct WheelFile {
  std::string filename;
  std::string url;
  std::string sha256;   // lowercase hex, as the index states it
  uint64_t bytes = 0;   // 0 when the index does not say (no "size", or null)
};

// $LUMEN_PYPI_URL without a trailing slash, else https://pypi.org.
std::string pypi_index_url();

// The JSON API URLs: for one release of a project, and for the whole project (every release,
// under "releases"; some mirrors serve only this one).
std::string pypi_release_json_url(const std::string& index, const std::string& project, const std::string& version);
std::string pypi_project_json_url(const std::string& index, const std::string& project);

// The release's wheel: a "bdist_wheel" entry with an http(s) URL and a sha256 digest, from
// "urls" (a release's answer) or from "releases"[version] (a project's answer, when
// whole_project). Throws lumen::Error naming the project when there is none or the answer is
// malformed.
WheelFile parse_pypi_release(const std::string& json_text, const std::string& project, const std::string& version,
                             bool whole_project = false);

}  // namespace lumen::cli
