#pragma once
// An incremental reader of server-sent events: bytes arrive in arbitrary pieces (a network read
// may end mid-line, even between '\r' and '\n'); each complete event's data is handed on.
// Follows the HTML event-stream rules that matter for OpenAI streams: lines end with "\n",
// "\r\n" or "\r"; "data:" lines (one optional space after the colon) are joined with "\n";
// a blank line ends the event; ":" comments and other fields are ignored.
#include <functional>
#include <string>
#include <string_view>

namespace lumen::benchmark {

class SseParser {
 public:
  using EventHandler = std::function<void(std::string_view data)>;

  explicit SseParser(EventHandler on_event) : on_event_(std::move(on_event)) {}

  void feed(std::string_view bytes);
  // At the end of the stream: an event whose closing blank line never came is still handed on
  // (some servers end with "data: [DONE]\n"), and a partial last line with it.
  void finish();

 private:
  void take_line(std::string_view line);
  void dispatch();

  EventHandler on_event_;
  std::string line_;  // the line read so far
  std::string data_;  // the event's data so far
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte was '\r': a '\n' next belongs to the same line end
};

}  // namespace lumen::benchmark
