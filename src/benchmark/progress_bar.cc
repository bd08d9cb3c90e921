#include "benchmark/progress_bar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace lumen::benchmark {

void draw_progress_bar(int64_t done, int64_t total, double seconds) {
  constexpr int kWidth = 40;
  const int filled = static_cast<int>(kWidth * std::clamp<int64_t>(done, 0, total) / std::max<int64_t>(total, 1));
  fmt::print(stderr, "\r[{}{}] {}/{} requests, {:.1f} s", std::string(static_cast<size_t>(filled), '#'),
             std::string(static_cast<size_t>(kWidth - filled), ' '), done, total, seconds);
  std::fflush(stderr);
}

void finish_progress_bar() {
  fmt::print(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace lumen::benchmark
