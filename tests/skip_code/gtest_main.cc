// The main of every GoogleTest binary that ctest runs with SKIP_RETURN_CODE (skip_code.cmake).
// gtest's own main exits 0 whether its tests passed or all skipped, so ctest could tell the two
// apart only by matching the output, and a pattern such as "[  SKIPPED ]" also matches a run in
// which one test failed and another skipped: a failure then read as a skip. This main exits
// with the skip code only when tests were selected, every one of them skipped, and none failed;
// a failure is always 1.
#include <gtest/gtest.h>

#ifndef LUMEN_SKIP_RETURN_CODE
#error "LUMEN_SKIP_RETURN_CODE must be defined (tests/skip_code/skip_code.cmake)"
#endif

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result != 0) return 1;
  const testing::UnitTest& run = *testing::UnitTest::GetInstance();
  const bool all_skipped = run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count();
  return all_skipped ? LUMEN_SKIP_RETURN_CODE : 0;
}
