# Writes OUT, a C++ source defining lumen::server::embedded_web_files(): the bytes of each file
# named in FILES (comma-separated names of files in DIR), so `lumen serve` carries its web page
# inside the binary and needs nothing beside it at run time. Run with `cmake -P` at build time;
# the file is rewritten only when its text changes, so nothing rebuilds needlessly.
string(REPLACE "," ";" FILES "${FILES}")
string(REPEAT "0x..," 16 sixteen)  # CMake's regular expressions have no {16}
set(body "")
set(table "")
set(index 0)
foreach(name IN LISTS FILES)
  file(READ "${DIR}/${name}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  # 0x.. for every byte, 16 to a line.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(${sixteen})" "\\1\n    " bytes "${bytes}")
  string(APPEND body "// ${name}\nconstexpr unsigned char file${index}[] = {\n    ${bytes}0};\n\n")
  string(APPEND table "      {\"${name}\", std::string_view(reinterpret_cast<const char*>(file${index}), ${size})},\n")
  math(EXPR index "${index} + 1")
endforeach()
set(text "// Generated at build time by cmake/embed_files.cmake from src/server/web/; do not edit.
#include \"server/web_assets.h\"

namespace lumen::server {

namespace {

// Each array ends in an extra 0 (an empty file still has a byte); the size leaves it out.
${body}}  // namespace

const std::vector<EmbeddedFile>& embedded_web_files() {
  static const std::vector<EmbeddedFile> files = {
${table}  };
  return files;
}

}  // namespace lumen::server
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
