# Writes OUT (a header defining LUMEN_GIT_DESCRIBE) from `git describe` in SRC, at every build,
# touching the file only when the text changes so that nothing rebuilds needlessly.
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY "${SRC}" OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR describe STREQUAL "")
  set(describe "unknown")
endif()
set(text "#define LUMEN_GIT_DESCRIBE \"${describe}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
