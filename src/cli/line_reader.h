#pragma once
// Lines a user types, for `lumen chat`: in a terminal through libedit (line editing, and a
// history that persists across sessions in $LUMEN_HOME/chat_history), otherwise plain lines from
// stdin with nothing printed, so piped use stays clean.
#include <optional>
#include <string>

namespace lumen::cli {

class LineReader {
 public:
  // `interactive`: stdin and stdout are a terminal.
  LineReader(bool interactive, std::string prompt);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its newline; nothing at the end of input (Ctrl-D).
  std::optional<std::string> read();

 private:
  bool interactive_;
  std::string prompt_;
  std::string history_path_;
};

}  // namespace lumen::cli
