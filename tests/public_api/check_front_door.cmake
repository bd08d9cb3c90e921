# The front door, for the code that the build cannot hold to it: src/server and src/cli are
# libraries under src/ (they include src/ like any module), and the Python bindings get src/
# through the model-naming library they share with the CLI. So the build alone would let them
# reach into the engine; this script is the check that does not.
#
#   cmake -DROOT=<dir> -P check_front_door.cmake
#
# Fails (naming each file and line) when, under ROOT:
#  - include/lumen names an engine:: type (the public API hides the engine's internals);
#  - src/server, src/cli or python includes an engine/ header (they use lumen/ instead);
#  - python includes anything from src/ but the model-naming helpers (cli/) and util/.
# front_door_planted.cmake plants one of each in a scratch tree and expects all four named.
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_front_door.cmake: pass -DROOT=<repository root>")
endif()

set(problems "")

# Appends "path:line: text" for every line of the files matching `globs` that matches `regex`.
function(find_lines regex out)
  set(found "")
  foreach(glob IN LISTS ARGN)
    file(GLOB_RECURSE files "${ROOT}/${glob}")
    foreach(f IN LISTS files)
      # One list element per line. A ';' would split a line and an unmatched '[' or ']' would
      # join lines (CMake's list syntax); none of them matters to the patterns.
      file(READ "${f}" text)
      string(REGEX REPLACE "[][;]" " " text "${text}")
      string(REPLACE "\n" ";" lines "${text}")
      set(n 0)
      foreach(line IN LISTS lines)
        math(EXPR n "${n} + 1")
        if(line MATCHES "${regex}")
          file(RELATIVE_PATH rel "${ROOT}" "${f}")
          string(STRIP "${line}" line)
          list(APPEND found "${rel}:${n}: ${line}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

find_lines("engine::" public_engine_names "include/lumen/*.h")
foreach(p IN LISTS public_engine_names)
  string(APPEND problems "  ${p}  (a public header names an engine:: type)\n")
endforeach()

find_lines("^[ \t]*#[ \t]*include[ \t]+\"engine/" engine_includes
           "src/server/*.h" "src/server/*.cc" "src/cli/*.h" "src/cli/*.cc" "python/*.h" "python/*.cc")
foreach(p IN LISTS engine_includes)
  string(APPEND problems "  ${p}  (include the public lumen/ header instead)\n")
endforeach()

# The bindings' own headers ("bindings.h"), the public API and the model-naming helpers.
find_lines("^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/" python_includes "python/*.h" "python/*.cc")
foreach(p IN LISTS python_includes)
  if(NOT p MATCHES "#[ \t]*include[ \t]+\"(lumen|cli|util)/")
    string(APPEND problems "  ${p}  (the Python bindings use lumen/ only)\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "internals reached around the public API (include/lumen):\n${problems}")
endif()
message(STATUS "front door kept: include/lumen names no engine:: type; server, cli and python include no engine/ header")
