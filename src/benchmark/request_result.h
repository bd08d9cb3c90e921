#pragma once
// What one benchmark request measured. Times are seconds from the moment it was sent.
#include <cstdint>
#include <string>
#include <vector>

namespace lumen::benchmark {

struct RequestResult {
  bool ok = false;
  std::string error;           // why it failed (HTTP status and message, connection error...)
  double ttft = 0;             // time to the first chunk that carried generated text
  double e2el = 0;             // until the stream ended
  std::vector<double> itl;     // gaps between consecutive text-carrying chunks
  int64_t text_chunks = 0;     // chunks that carried generated text
  int64_t output_tokens = 0;   // the server's usage count, else the text-carrying chunks
  int64_t prompt_tokens = -1;  // the server's usage count; -1: it did not say
  bool usage_reported = false;

  // (e2e - ttft) / (output_tokens - 1): the mean time per token after the first; 0 for a
  // request with a single token (it has no second token to time).
  double tpot() const { return output_tokens > 1 ? (e2el - ttft) / static_cast<double>(output_tokens - 1) : 0.0; }
};

}  // namespace lumen::benchmark
