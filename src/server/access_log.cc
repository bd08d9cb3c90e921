#include "server/access_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <random>

#include "util/error.h"

namespace lumen::server {

LogLevel parse_log_level(const std::string& name) {
  if (name == "quiet") return LogLevel::Quiet;
  if (name == "info") return LogLevel::Info;
  if (name == "verbose") return LogLevel::Verbose;
  fail("--log-level must be quiet, info or verbose, not '{}'", name);
}

RequestNote& this_request_note() {
  thread_local RequestNote note;
  return note;
}

std::string new_request_id() {
  // A random base, then a counter mixed through a bijection: unique, and no id tells the next.
  static const uint64_t base = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  uint64_t x = base + counter.fetch_add(1) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return fmt::format("req-{:016x}", x);
}

std::string request_id_for(std::string_view client_id) {
  const bool usable =
      !client_id.empty() && client_id.size() <= 128 && std::all_of(client_id.begin(), client_id.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == ':' || c == '-';
      });
  return usable ? std::string(client_id) : new_request_id();
}

namespace {

// Client-controlled text (a decoded path, a User-Agent) on one log line: no control characters,
// so a client cannot forge lines, and bounded.
std::string loggable(std::string_view text, size_t limit) {
  std::string out;
  for (unsigned char c : text.substr(0, limit)) out += (c < 0x20 || c == 0x7f || c == '"') ? '?' : static_cast<char>(c);
  return out;
}

}  // namespace

std::string access_log_line(LogLevel level, const httplib::Request& request, const httplib::Response& response,
                            const RequestNote& note) {
  const bool server_fault = response.status >= 500;
  if (level == LogLevel::Quiet && !server_fault) return {};
  const double ms =
      note.start == std::chrono::steady_clock::time_point{}
          ? 0.0
          : std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - note.start).count();
  std::string line = fmt::format("lumen serve: {} {} {} {} {} {:.1f} ms", request.remote_addr,
                                 response.get_header_value("X-Request-Id"), loggable(request.method, 16), loggable(request.path, 200),
                                 response.status, ms);
  if (note.prompt_tokens >= 0) {
    line += fmt::format(" prompt_tokens={} completion_tokens={}", note.prompt_tokens, note.completion_tokens);
  }
  if (level == LogLevel::Verbose) {
    line += fmt::format(" body_bytes={} user_agent=\"{}\"", request.body.size(),
                        loggable(request.get_header_value("User-Agent"), 80));
  }
  if (!note.error_detail.empty()) line += fmt::format(" error=\"{}\"", loggable(note.error_detail, 400));
  return line + "\n";
}

}  // namespace lumen::server
