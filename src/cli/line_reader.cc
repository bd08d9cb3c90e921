#include "cli/line_reader.h"

#include <editline/readline.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace lumen::cli {

namespace {

constexpr int kHistoryLines = 1000;

std::string history_file() {
  const char* home = std::getenv("LUMEN_HOME");
  std::filesystem::path dir;
  if (home != nullptr && *home != '\0') {
    dir = home;
  } else if (const char* user_home = std::getenv("HOME"); user_home != nullptr && *user_home != '\0') {
    dir = std::filesystem::path(user_home) / ".cache" / "lumen";
  } else {
    return {};
  }
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  return (dir / "chat_history").string();
}

}  // namespace

LineReader::LineReader(bool interactive, std::string prompt)
    : interactive_(interactive), prompt_(std::move(prompt)) {
  if (!interactive_) return;
  using_history();
  stifle_history(kHistoryLines);
  history_path_ = history_file();
  if (!history_path_.empty()) read_history(history_path_.c_str());  // none yet is fine
}

LineReader::~LineReader() = default;

std::optional<std::string> LineReader::read() {
  if (!interactive_) {
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  }
  char* raw = readline(prompt_.c_str());
  if (raw == nullptr) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  if (!line.empty()) {
    add_history(line.c_str());
    // Saved at once: Ctrl-C at the prompt ends the process without running destructors.
    if (!history_path_.empty()) write_history(history_path_.c_str());
  }
  return line;
}

}  // namespace lumen::cli
