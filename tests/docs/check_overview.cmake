# docs/architecture.md is the newcomer's map; this keeps it one:
#
#   cmake -DROOT=<dir> -P check_overview.cmake
#
# Fails when, under ROOT, a directory of src/ has no row ("| `name` |") in docs/architecture.md's
# module table, or the overview has grown past 200 lines (facts belong in the topic documents).
# overview_planted.cmake shows it fails on both.
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_overview.cmake: pass -DROOT=<repository root>")
endif()
set(overview "${ROOT}/docs/architecture.md")
file(READ "${overview}" text)
set(problems "")

file(GLOB entries LIST_DIRECTORIES true RELATIVE "${ROOT}/src" "${ROOT}/src/*")
foreach(name IN LISTS entries)
  if(IS_DIRECTORY "${ROOT}/src/${name}")
    string(FIND "${text}" "| `${name}` |" at)
    if(at EQUAL -1)
      string(APPEND problems "  src/${name}/ has no row in the module table\n")
    endif()
  endif()
endforeach()

string(REGEX MATCHALL "\n" newlines "${text}")
list(LENGTH newlines n_lines)
if(n_lines GREATER 200)
  string(APPEND problems "  docs/architecture.md has ${n_lines} lines (at most 200: move detail to a topic document)\n")
endif()

if(problems)
  message(FATAL_ERROR "the overview is out of date:\n${problems}")
endif()
message(STATUS "docs/architecture.md: every src/ module in its table, ${n_lines} lines")
