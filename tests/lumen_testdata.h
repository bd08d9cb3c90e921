#pragma once
// The shared test data (tokenizer vocabularies and vectors, broken GGUF files) lives beside the
// repository in CI (../shared/testdata) but not in a user's clone. CMake finds it through one
// cache variable, LUMEN_TESTDATA_DIR; a test that reads it starts with
// LUMEN_REQUIRE_TESTDATA(), so that without it the test is reported as skipped, with the
// reason, and never as passed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace lumen::testing {

// The folder: the variable LUMEN_TESTDATA_DIR where a test binary runs away from its build (a
// GPU machine's bundle, scripts/gpu_check.sh), else the configured one. Tests that read the data
// through this function (rather than the macro) find it either way.
inline std::string testdata_dir() {
  const char* at = std::getenv("LUMEN_TESTDATA_DIR");
  return at != nullptr && *at != '\0' ? std::string(at) : std::string(LUMEN_TESTDATA_DIR);
}

inline bool have_testdata() { return std::filesystem::is_directory(testdata_dir()); }

}  // namespace lumen::testing

#define LUMEN_REQUIRE_TESTDATA()                                                        \
  if (!::lumen::testing::have_testdata())                                               \
  GTEST_SKIP() << "the shared test data is not at " << ::lumen::testing::testdata_dir() \
               << " (configure with -DLUMEN_TESTDATA_DIR=DIR, or set LUMEN_TESTDATA_DIR)"
