#include "tools/logits_file.h"

#include <cstring>
#include <filesystem>

#include "tools/log_prob_row.h"
#include "util/error.h"

namespace lumen::tools {

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
// Bounds on what a header may claim before anything is allocated from it: far above any real
// vocabulary or context, and together no more than 2^31 tokens (llama.cpp's int indexing).
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxTokens = int64_t{1} << 31;

template <typename T>
void put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
bool get(std::ifstream& in, T& value) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&value), sizeof value));
}

}  // namespace

LogitsFileWriter::LogitsFileWriter(const std::string& path, const LogitsFileHeader& header,
                                   std::span<const int32_t> tokens)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  if (!out_) fail("cannot write the logits file '{}'", path);
  out_.write(kMagic, sizeof kMagic);
  put(out_, static_cast<uint32_t>(header.n_ctx));
  put(out_, static_cast<int32_t>(header.n_vocab));
  put(out_, static_cast<int32_t>(header.n_chunk));
  out_.write(reinterpret_cast<const char*>(tokens.data()),
             static_cast<std::streamsize>(tokens.size_bytes()));
  if (!out_) fail("cannot write the logits file '{}'", path_);
}

void LogitsFileWriter::write_window(std::span<const uint16_t> rows) {
  out_.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size_bytes()));
  if (!out_) fail("cannot write the logits file '{}' (disk full?)", path_);
}

void LogitsFileWriter::close() {
  out_.close();
  if (!out_) fail("cannot write the logits file '{}'", path_);
}

LogitsFileReader::LogitsFileReader(const std::string& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("the logits file '{}' is a directory", path);
  in_.open(path, std::ios::binary);
  if (!in_) fail("cannot read the logits file '{}'", path);
  char magic[sizeof kMagic];
  if (!in_.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    fail("'{}' is not a llama.cpp base-logits file (no _logits_ header)", path);
  }
  uint32_t n_ctx = 0;
  int32_t n_vocab = 0, n_chunk = 0;
  if (!get(in_, n_ctx) || !get(in_, n_vocab) || !get(in_, n_chunk)) fail("the logits file '{}' is truncated", path);
  if (n_ctx < 4 || n_vocab < 1 || n_vocab > kMaxVocab || n_chunk < 1 ||
      static_cast<int64_t>(n_ctx) * n_chunk > kMaxTokens) {
    fail("the logits file '{}' has an impossible header (context {}, vocabulary {}, {} windows)", path, n_ctx,
         n_vocab, n_chunk);
  }
  header_ = {n_ctx, n_vocab, n_chunk};
  // The whole file must be there before the tokens are allocated from the header's claim.
  const uint64_t expected = sizeof kMagic + 12 + static_cast<uint64_t>(n_ctx) * n_chunk * 4 +
                            static_cast<uint64_t>(n_chunk) * header_.rows_per_window() *
                                encoded_row_entries(n_vocab) * 2;
  // A pipe has no size to check the header's claim against, so only regular files are read.
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("the logits file '{}' is not a regular file", path);
  if (size < expected) {
    fail("the logits file '{}' is truncated ({} bytes; its header needs {})", path, size, expected);
  }
  tokens_.resize(static_cast<size_t>(n_ctx) * static_cast<size_t>(n_chunk));
  if (!in_.read(reinterpret_cast<char*>(tokens_.data()), static_cast<std::streamsize>(tokens_.size() * 4))) {
    fail("the logits file '{}' is truncated", path);
  }
  for (int32_t t : tokens_) {
    if (t < 0 || t >= n_vocab) fail("the logits file '{}' holds token {}, outside its vocabulary of {}", path, t, n_vocab);
  }
}

void LogitsFileReader::read_window(std::vector<uint16_t>& rows) {
  if (windows_read_ >= header_.n_chunk) fail("the logits file '{}' has only {} windows", path_, header_.n_chunk);
  rows.resize(static_cast<size_t>(header_.rows_per_window() * encoded_row_entries(header_.n_vocab)));
  if (!in_.read(reinterpret_cast<char*>(rows.data()), static_cast<std::streamsize>(rows.size() * 2))) {
    fail("the logits file '{}' is truncated in window {}", path_, windows_read_ + 1);
  }
  ++windows_read_;
}

}  // namespace lumen::tools
