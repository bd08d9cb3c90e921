#pragma once
// Turns one streamed OpenAI response into a RequestResult: the HTTP status, then the body's
// bytes with the time each piece arrived (seconds since the request was sent), then the end.
// A chunk "carries tokens" when its choice has text (completions: `text`, chat:
// `delta.content`); their arrival times give TTFT and the inter-token gaps. Output tokens are
// the final usage chunk's count (stream_options.include_usage) when the server sends one, else
// the number of text-carrying chunks. Anything but a 200 stream that ends in [DONE] with text
// and no error event is a failure, with a message saying why.
#include <string>
#include <string_view>
#include <vector>

#include "benchmark/request_result.h"
#include "benchmark/sse_parser.h"

namespace lumen::benchmark {

class StreamRecorder {
 public:
  StreamRecorder();
  StreamRecorder(const StreamRecorder&) = delete;
  StreamRecorder& operator=(const StreamRecorder&) = delete;

  void on_status(int status) { status_ = status; }
  void on_bytes(std::string_view bytes, double now);
  // transport_error: non-empty when the connection failed (refused, reset, timed out).
  RequestResult finish(double now, const std::string& transport_error = {});

 private:
  void on_event(std::string_view data);

  SseParser parser_;
  int status_ = 0;
  double now_ = 0;  // the arrival time of the bytes being parsed
  std::vector<double> token_times_;
  std::string error_body_;    // the body of a non-200 answer, for its message
  std::string stream_error_;  // an error event, or a chunk that is not JSON
  bool done_ = false;
  int64_t usage_completion_ = -1;
  int64_t usage_prompt_ = -1;
};

}  // namespace lumen::benchmark
