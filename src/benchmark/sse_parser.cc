#include "benchmark/sse_parser.h"

namespace lumen::benchmark {

void SseParser::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      take_line(line_);
      line_.clear();
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::finish() {
  if (!line_.empty()) {
    take_line(line_);
    line_.clear();
  }
  dispatch();
}

void SseParser::take_line(std::string_view line) {
  if (line.empty()) {
    dispatch();
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;  // event, id, retry: not used by OpenAI streams
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

void SseParser::dispatch() {
  if (!has_data_) return;
  std::string data = std::move(data_);
  data_.clear();
  has_data_ = false;
  on_event_(data);
}

}  // namespace lumen::benchmark
