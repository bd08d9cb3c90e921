// llama.cpp's base-logits file: what is written reads back, and a damaged file is refused with
// a sentence naming what is wrong.
#include "tools/logits_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "lumen/error.h"
#include "tools/log_prob_row.h"

namespace lumen::tools {
namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("lumen_logits_") + name)).string();
}

void expect_refused(const std::string& path, const std::string& words) {
  try {
    LogitsFileReader reader(path);
    FAIL() << "accepted " << path;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(LogitsFile, WrittenWindowsReadBack) {
  const std::string path = temp_path("roundtrip.bin");
  const LogitsFileHeader header{8, 5, 2};  // 3 rows per window, 10 entries per row
  const std::vector<int32_t> tokens = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 1};
  std::vector<uint16_t> w0(30), w1(30);
  for (size_t i = 0; i < 30; ++i) w0[i] = static_cast<uint16_t>(i), w1[i] = static_cast<uint16_t>(1000 + i);
  {
    LogitsFileWriter writer(path, header, tokens);
    writer.write_window(w0);
    writer.write_window(w1);
    writer.close();
  }
  EXPECT_EQ(std::filesystem::file_size(path), 8 + 12 + 16 * 4 + 2 * 30 * 2u);
  LogitsFileReader reader(path);
  EXPECT_EQ(reader.header().n_ctx, 8);
  EXPECT_EQ(reader.header().n_vocab, 5);
  EXPECT_EQ(reader.header().n_chunk, 2);
  EXPECT_EQ(reader.header().rows_per_window(), 3);
  EXPECT_EQ(reader.tokens(), tokens);
  std::vector<uint16_t> rows;
  reader.read_window(rows);
  EXPECT_EQ(rows, w0);
  reader.read_window(rows);
  EXPECT_EQ(rows, w1);
  EXPECT_THROW(reader.read_window(rows), Error);

  // Damaged copies.
  const std::string bad = temp_path("bad.bin");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto write = [&](const std::string& content) { std::ofstream(bad, std::ios::binary) << content; };
  write(bytes.substr(0, bytes.size() - 1));
  expect_refused(bad, "truncated");
  write("_logitz_" + bytes.substr(8));
  expect_refused(bad, "not a llama.cpp base-logits file");
  std::string huge = bytes;
  huge[16] = '\x7f', huge[17] = huge[18] = huge[19] = '\x7f';  // n_chunk = 2^31 - ...
  write(huge);
  expect_refused(bad, "impossible header");
  std::string foreign = bytes;
  foreign[20] = 9;  // token 9 in a vocabulary of 5
  write(foreign);
  expect_refused(bad, "outside its vocabulary of 5");
  std::remove(bad.c_str());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace lumen::tools
