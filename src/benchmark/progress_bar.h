#pragma once
// The benchmarks' progress line on stderr, redrawn in place: "[####    ] 12/64 requests, 3.4 s".
// Callers draw it only when stderr is a terminal, so logs and JSON stay clean.
#include <cstdint>

namespace lumen::benchmark {

void draw_progress_bar(int64_t done, int64_t total, double seconds);

// Ends the line after the last draw.
void finish_progress_bar();

}  // namespace lumen::benchmark
