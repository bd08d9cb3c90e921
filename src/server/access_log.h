#pragma once
// One line per request on stderr: the access log of `lumen serve`, and where an internal error's
// detail goes (the client gets only the request id).
//
// The line's token counts come from the routes: they record them in a note kept per thread,
// because cpp-httplib runs a request's handler, its stream provider and its logger on the same
// worker thread, and gives the logger nothing but the request and response. The logger reads
// and clears the note.
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace lumen::server {

enum class LogLevel { Quiet, Info, Verbose };

// "quiet", "info" or "verbose"; throws lumen::Error for anything else.
LogLevel parse_log_level(const std::string& name);

struct RequestNote {
  int64_t prompt_tokens = -1;      // -1: not a generation request
  int64_t completion_tokens = -1;
  std::chrono::steady_clock::time_point start{};
  std::string error_detail;        // an internal error's message, for the log only
};

// The note of the request this thread is serving.
RequestNote& this_request_note();

// A fresh id for a request ("req-" and 16 hex digits), unique within the process and not
// guessable from the previous ones.
std::string new_request_id();
// The id of a request: the client's own X-Request-Id when it is one a log line and a header can
// hold as it is (1 to 128 of A-Z a-z 0-9 . _ : -), so a client can follow its request through
// the logs as it does behind other OpenAI-style servers; else a new one.
std::string request_id_for(std::string_view client_id);

// The access log line for a finished request (empty at LogLevel::Quiet, except for 5xx).
std::string access_log_line(LogLevel level, const httplib::Request& request, const httplib::Response& response,
                            const RequestNote& note);

}  // namespace lumen::server
