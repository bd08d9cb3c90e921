#pragma once
// The shared test data (tokenizer vocabularies and vectors, broken GGUF files) lives beside the
// repository in CI (../shared/testdata) but not in a user's clone. CMake finds it through one
// cache variable, LUMEN_TESTDATA_DIR; a test that reads it starts with
// LUMEN_REQUIRE_TESTDATA(), so that without it the test is reported as skipped, with the
// reason, and never as passed.
#include <gtest/gtest.h>

#include <filesystem>

namespace lumen::testing {

inline bool have_testdata() { return std::filesystem::is_directory(LUMEN_TESTDATA_DIR); }

}  // namespace lumen::testing

#define LUMEN_REQUIRE_TESTDATA()                                                                        \
  if (!::lumen::testing::have_testdata())                                                               \
  GTEST_SKIP() << "the shared test data is not at " LUMEN_TESTDATA_DIR " (configure with "              \
                  "-DLUMEN_TESTDATA_DIR=DIR)"
