# The debug preset builds everything under ASan + UBSan: the parsers face hostile files,
# and a sanitizer turns a silent out-of-bounds read into a failing test. The preset compiles it
# at -O1 with line tables only (CMAKE_CXX_FLAGS_DEBUG in CMakePresets.json), as the ASan
# documentation advises: at -O0 the SIMD kernels' intrinsics are calls, and the engine tests ran
# 7-15x slower. Reports still name file and line; for a debugger session,
# configure with -DCMAKE_CXX_FLAGS_DEBUG=-g.
if(LUMEN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Coverage instrumentation for libFuzzer in every library the fuzz targets link.
if(LUMEN_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
