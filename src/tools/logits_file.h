#pragma once
// llama.cpp's base-logits file (`llama-perplexity --kl-divergence-base`), read and written
// byte for byte, so a base made by either tool can be compared against by the other:
//   "_logits_", uint32 n_ctx, int32 n_vocab, int32 n_chunk,
//   int32 tokens[n_chunk * n_ctx]                   (the evaluated text, windows back to back)
//   per window: (n_ctx - 1 - n_ctx/2) encoded rows  (log_prob_row.h: encoded_row_entries uint16)
// all little-endian (the x86 and ARM machines Lumen runs on).
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace lumen::tools {

struct LogitsFileHeader {
  int64_t n_ctx = 0;
  int64_t n_vocab = 0;
  int64_t n_chunk = 0;
  // Rows scored per window: positions n_ctx/2 .. n_ctx-2, each predicting the next token.
  int64_t rows_per_window() const { return n_ctx - 1 - n_ctx / 2; }
};

class LogitsFileWriter {
 public:
  // Writes the header and the tokens of n_chunk windows; throws lumen::Error when the file
  // cannot be written.
  LogitsFileWriter(const std::string& path, const LogitsFileHeader& header, std::span<const int32_t> tokens);
  // One window's rows, in window order.
  void write_window(std::span<const uint16_t> rows);
  void close();

 private:
  std::string path_;
  std::ofstream out_;
};

class LogitsFileReader {
 public:
  // Reads and checks the header and tokens (lumen::Error naming the file and what is wrong:
  // not such a file, truncated, sizes out of range, a token outside the vocabulary).
  explicit LogitsFileReader(const std::string& path);
  const LogitsFileHeader& header() const { return header_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // The next window's rows (rows_per_window() encoded rows); lumen::Error when truncated.
  void read_window(std::vector<uint16_t>& rows);

 private:
  std::string path_;
  std::ifstream in_;
  LogitsFileHeader header_;
  std::vector<int32_t> tokens_;
  int64_t windows_read_ = 0;
};

}  // namespace lumen::tools
