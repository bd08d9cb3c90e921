#pragma once
// What `lumen --version` prints: the release, the commit, how it was built (build type,
// sanitizers, CUDA) and which CPU kernel levels this machine will use.
#include <string>

namespace lumen::cli {

std::string version_text();

}  // namespace lumen::cli
