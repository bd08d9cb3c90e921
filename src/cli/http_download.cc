#include "cli/http_download.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "cli/download_progress.h"
#include "cli/stop_signals.h"
#include "cli/http_range.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

using CurlHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

CurlHandle new_handle(const std::string& url) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CurlHandle curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) fail("libcurl could not start a transfer");
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  // Only the web: an index answer cannot send us to file:// or another scheme.
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "lumen-pull");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  // A connection that delivers nothing for a minute is dead: give up (the partial file stays).
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  return curl;
}

std::string transfer_error(CURL* h, CURLcode code, const char* error_buffer, const std::string& url) {
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (code == CURLE_HTTP_RETURNED_ERROR) return fmt::format("{} answered HTTP {}", url, status);
  return fmt::format("{}: {}", url, *error_buffer != '\0' ? error_buffer : curl_easy_strerror(code));
}

struct TextSink {
  std::string body;
  size_t max_bytes;
  bool too_big = false;
};

size_t write_text(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<TextSink*>(user);
  const size_t bytes = size * count;
  if (sink->body.size() + bytes > sink->max_bytes) {
    sink->too_big = true;
    return 0;
  }
  sink->body.append(data, bytes);
  return bytes;
}

// State of one resuming download, shared with libcurl's callbacks.
struct FileSink {
  CURL* curl = nullptr;
  std::string path;
  uint64_t have = 0;           // bytes in the partial file when this request started
  uint64_t written = 0;        // bytes added by this request
  uint64_t limit = 0;          // the most the whole file may hold
  std::optional<ContentRange> range;
  std::FILE* file = nullptr;
  std::string error;           // why a callback stopped the transfer
  DownloadProgress* progress = nullptr;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<FileSink*>(user);
  const std::string_view line(data, size * count);
  // Each response (a redirect, then the file) starts with its status line: forget the last one's range.
  if (line.rfind("HTTP/", 0) == 0) sink->range.reset();
  constexpr std::string_view kName = "content-range:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    if (match) sink->range = parse_content_range(line.substr(kName.size()));
  }
  return size * count;
}

size_t write_file(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<FileSink*>(user);
  const size_t bytes = size * count;
  if (sink->file == nullptr) {
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    switch (resume_action(status, sink->range, sink->have)) {
      case ResumeAction::kAppend:
        sink->file = std::fopen(sink->path.c_str(), "ab");
        break;
      case ResumeAction::kRestart:
        sink->have = 0;
        sink->file = std::fopen(sink->path.c_str(), "wb");
        break;
      case ResumeAction::kReject:
        sink->error = fmt::format("the server answered the request for bytes {}- with HTTP {}{}", sink->have, status,
                                  sink->range ? fmt::format(" and bytes {}-{}", sink->range->first, sink->range->last) : "");
        return 0;
    }
    if (sink->file == nullptr) {
      sink->error = fmt::format("cannot write '{}': {}", sink->path, std::strerror(errno));
      return 0;
    }
  }
  if (sink->have + sink->written + bytes > sink->limit) {
    sink->error = fmt::format("the download is larger than the {} bytes it may be; stopped there", sink->limit);
    return 0;
  }
  if (std::fwrite(data, 1, bytes, sink->file) != bytes) {
    sink->error = fmt::format("cannot write '{}': {}", sink->path, std::strerror(errno));
    return 0;
  }
  sink->written += bytes;
  return bytes;
}

// A non-zero return aborts the transfer (CURLE_ABORTED_BY_CALLBACK): a SIGINT or SIGTERM asked
// the pull to stop.
int stop_on_signal(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return stop_requested() ? 1 : 0; }

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  if (stop_requested()) return 1;
  auto* sink = static_cast<FileSink*>(user);
  if (sink->progress != nullptr) sink->progress->update(static_cast<uint64_t>(now), static_cast<uint64_t>(total));
  return 0;
}

}  // namespace

std::optional<std::string> http_get_text(const std::string& url, size_t max_bytes) {
  CurlHandle curl = new_handle(url);
  char error_buffer[CURL_ERROR_SIZE] = "";
  TextSink sink{.body = {}, .max_bytes = max_bytes};
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, write_text);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, stop_on_signal);
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  const CURLcode code = curl_easy_perform(curl.get());
  if (code == CURLE_ABORTED_BY_CALLBACK) throw DownloadInterrupted(fmt::format("{}: stopped by a signal", url));
  if (sink.too_big) fail("{}: the answer is larger than {} bytes", url, max_bytes);
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (code == CURLE_HTTP_RETURNED_ERROR && status == 404) return std::nullopt;
  // The index could not be reached or failed: a later run may get past it.
  if (code != CURLE_OK) throw DownloadInterrupted(transfer_error(curl.get(), code, error_buffer, url));
  return std::move(sink.body);
}

void download_resuming(const std::string& url, const std::string& partial_path, uint64_t expected_bytes,
                       uint64_t max_bytes, const std::string& label) {
  if (expected_bytes > max_bytes) {
    fail("{}: the index says the file is {} bytes, more than the {} it may be; refused", url, expected_bytes,
         max_bytes);
  }
  std::error_code ec;
  uint64_t have = std::filesystem::is_regular_file(partial_path, ec) ? std::filesystem::file_size(partial_path, ec) : 0;
  if (ec) have = 0;
  const uint64_t limit = expected_bytes > 0 ? expected_bytes : max_bytes;
  if (have > limit) {
    std::filesystem::remove(partial_path, ec);
    have = 0;
  }
  if (expected_bytes > 0 && have == expected_bytes) return;  // a previous run got it all
  if (have == limit) {
    // Whole by the bound yet the size is unknown: the next byte would pass it, so start over.
    std::filesystem::remove(partial_path, ec);
    have = 0;
  }

  CurlHandle curl = new_handle(url);
  char error_buffer[CURL_ERROR_SIZE] = "";
  DownloadProgress progress(label, have, expected_bytes);
  FileSink sink;
  sink.curl = curl.get();
  sink.path = partial_path;
  sink.have = have;
  sink.limit = limit;
  sink.progress = &progress;
  // Asked with CURLOPT_RANGE rather than CURLOPT_RESUME_FROM so that a server that ignores it
  // (200 and the whole file) restarts the download instead of failing it.
  const std::string range = fmt::format("{}-", have);
  if (have > 0) curl_easy_setopt(curl.get(), CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, write_file);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  // A body announced (Content-Length) past the bound is refused before any of it is written; a
  // longer one than announced, or one with no length, is stopped by write_file at the bound. (The
  // whole bound, not what is left of it: a server that ignores the Range sends the whole file.)
  curl_easy_setopt(curl.get(), CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limit));
  const CURLcode code = curl_easy_perform(curl.get());
  const bool closed = sink.file == nullptr || std::fclose(sink.file) == 0;
  progress.finish();
  if (!sink.error.empty()) fail("{}: {}", url, sink.error);
  if (code == CURLE_FILESIZE_EXCEEDED) {
    fail("{}: the server announced a body larger than the {} bytes the file may hold; refused", url, limit);
  }
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    throw DownloadInterrupted(fmt::format("stopped by a signal; run the same command again to resume from {} bytes",
                                          sink.have + sink.written));
  }
  if (code != CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    // 416: the server has nothing past what the partial file holds; it cannot be continued.
    if (status == 416) {
      std::filesystem::remove(partial_path, ec);
      fail("{}", transfer_error(curl.get(), code, error_buffer, url));
    }
    throw DownloadInterrupted(fmt::format("{}; run the same command again to resume from {} bytes",
                                          transfer_error(curl.get(), code, error_buffer, url),
                                          sink.have + sink.written));
  }
  if (!closed) fail("cannot write '{}': {}", partial_path, std::strerror(errno));
  const uint64_t size = sink.have + sink.written;
  if (expected_bytes > 0 && size != expected_bytes) {
    throw DownloadInterrupted(
        fmt::format("{}: the download ended at {} bytes, {} expected; run the same command again to resume", url, size,
                    expected_bytes));
  }
}

}  // namespace lumen::cli
