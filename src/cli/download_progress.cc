#include "cli/download_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace lumen::cli {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kBarWidth = 30;
}  // namespace

DownloadProgress::DownloadProgress(std::string label, uint64_t resumed_from, uint64_t total)
    : label_(std::move(label)),
      resumed_from_(resumed_from),
      total_(total),
      done_(resumed_from),
      terminal_(isatty(STDERR_FILENO) != 0),
      started_(std::chrono::steady_clock::now()) {
  if (!terminal_) {
    const std::string size = total_ > 0 ? fmt::format(" ({:.1f} MiB)", static_cast<double>(total_) / kMiB) : "";
    const std::string resume =
        resumed_from_ > 0 ? fmt::format(", resuming at {:.1f} MiB", static_cast<double>(resumed_from_) / kMiB) : "";
    fmt::print(stderr, "lumen pull: downloading {}{}{}\n", label_, size, resume);
  }
}

void DownloadProgress::update(uint64_t now_bytes, uint64_t request_total) {
  done_ = resumed_from_ + now_bytes;
  if (total_ == 0 && request_total > 0) total_ = resumed_from_ + request_total;
  if (!terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(false);
}

void DownloadProgress::finish() {
  if (terminal_) draw(true);
}

void DownloadProgress::draw(bool final) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double rate = seconds > 0 ? static_cast<double>(done_ - std::min(done_, resumed_from_)) / kMiB / seconds : 0;
  std::string bar;
  if (total_ > 0) {
    const double fraction = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    const int filled = static_cast<int>(fraction * kBarWidth);
    bar = fmt::format("[{}{}] {:3d}%  {:.1f}/{:.1f} MiB", std::string(static_cast<size_t>(filled), '#'),
                      std::string(static_cast<size_t>(kBarWidth - filled), '.'), static_cast<int>(fraction * 100),
                      static_cast<double>(done_) / kMiB, static_cast<double>(total_) / kMiB);
  } else {
    bar = fmt::format("{:.1f} MiB", static_cast<double>(done_) / kMiB);
  }
  fmt::print(stderr, "\r\033[K{}  {}  {:.1f} MiB/s{}", label_, bar, rate, final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace lumen::cli
