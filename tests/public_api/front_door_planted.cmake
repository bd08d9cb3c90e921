# check_front_door.cmake must be able to fail: this writes a scratch tree with one breach of
# each kind (plus lines that are allowed), runs the check on it, and passes only when the check
# fails naming exactly the four breaches.
#
#   cmake -DCHECK=<check_front_door.cmake> -DSCRATCH=<dir> -P front_door_planted.cmake
file(REMOVE_RECURSE "${SCRATCH}")
# The public header's breach comes after an unmatched '[' and a ';' (CMake list syntax).
file(WRITE "${SCRATCH}/include/lumen/planted.h"
     "#pragma once\n// positions [a, b); fine\nnamespace lumen {\nvoid use(engine::Scheduler&);\n}\n")
file(WRITE "${SCRATCH}/src/server/planted.cc" "#include \"lumen/engine.h\"\n#include \"engine/scheduler.h\"\n")
file(WRITE "${SCRATCH}/src/cli/planted.h" "#pragma once\n  #  include \"engine/loaded_model.h\"\n#include \"grammar/grammar.h\"\n")
file(WRITE "${SCRATCH}/python/src/planted.cc"
     "#include \"bindings.h\"\n#include \"lumen/model.h\"\n#include \"cli/default_model.h\"\n#include \"util/error.h\"\n"
     "#include \"spec/proposer.h\"\n")
# What must not be flagged: an engine/ include elsewhere under src/.
file(WRITE "${SCRATCH}/src/engine/planted.cc" "#include \"engine/scheduler.h\"\n")

execute_process(COMMAND "${CMAKE_COMMAND}" -DROOT=${SCRATCH} -P "${CHECK}" RESULT_VARIABLE rc ERROR_VARIABLE err
                OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "the check passed a tree with planted breaches:\n${out}${err}")
endif()
set(expected "include/lumen/planted.h:4:" "src/server/planted.cc:2:" "src/cli/planted.h:2:" "python/src/planted.cc:5:")
foreach(e IN LISTS expected)
  string(FIND "${err}" "${e}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check did not name ${e}:\n${err}")
  endif()
endforeach()
string(REGEX MATCHALL "\\((a public header|include the public|the Python bindings)" named "${err}")
list(LENGTH named n)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "the check named ${n} lines, expected the 4 planted breaches:\n${err}")
endif()
message(STATUS "the check fails on every planted breach, and only on them")
