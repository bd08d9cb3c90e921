# The debug preset builds everything under ASan + UBSan: the parsers face hostile files,
# and a sanitizer turns a silent out-of-bounds read into a failing test.
if(LUMEN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Coverage instrumentation for libFuzzer in every library the fuzz targets link.
if(LUMEN_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
