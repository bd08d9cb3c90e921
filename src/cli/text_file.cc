#include "cli/text_file.h"

#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace lumen::cli {

std::string read_text_file(const std::string& path, const std::string& role, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("the {} '{}' is a directory", role, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read the {} '{}'", role, path);
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) fail("the {} '{}' is larger than {} MiB", role, path, max_bytes >> 20);
  }
  if (in.bad()) fail("cannot read the {} '{}'", role, path);
  return text;
}

}  // namespace lumen::cli
