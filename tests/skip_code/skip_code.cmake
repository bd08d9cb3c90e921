# How a test tells ctest "nothing could run here" (no GPU, no Chromium, a CPU without the
# instruction set): it exits with LUMEN_SKIP_RETURN_CODE, and its ctest entry sets
# SKIP_RETURN_CODE to it. Never SKIP_REGULAR_EXPRESSION: ctest then reports a matching run as
# skipped whatever its exit code, and "[  SKIPPED ]" or "1 skipped" also match a run with a
# failure in it. GoogleTest binaries link lumen_gtest_main (gtest_main.cc); pytest runs go
# through LUMEN_PYTEST_SKIP_CODE (pytest_skip_code.py). Included by tests/CMakeLists.txt, and by
# the planted-failure project of skip_code_test.py, which proves a failure still reads as one.
set(LUMEN_SKIP_RETURN_CODE 77)
set(LUMEN_PYTEST_SKIP_CODE ${CMAKE_CURRENT_LIST_DIR}/pytest_skip_code.py)

if(NOT TARGET lumen_gtest_main)
  add_library(lumen_gtest_main STATIC ${CMAKE_CURRENT_LIST_DIR}/gtest_main.cc)
  target_link_libraries(lumen_gtest_main PUBLIC GTest::gtest)
  target_compile_definitions(lumen_gtest_main PRIVATE LUMEN_SKIP_RETURN_CODE=${LUMEN_SKIP_RETURN_CODE})
endif()
