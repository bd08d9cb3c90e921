#include "util/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace lumen {
namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(MappedFile, MapsContents) {
  std::string path = temp_path("lumen_mapped_file_test.bin");
  { std::ofstream(path, std::ios::binary) << "hello"; }
  MappedFile file(path);
  ASSERT_EQ(file.bytes().size(), 5u);
  EXPECT_EQ(file.bytes()[0], 'h');
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.bytes()[4], 'o');
  std::remove(path.c_str());
}

TEST(MappedFile, EmptyFileHasNoBytes) {
  std::string path = temp_path("lumen_mapped_file_empty.bin");
  { std::ofstream out(path, std::ios::binary); }
  MappedFile file(path);
  EXPECT_TRUE(file.bytes().empty());
  std::remove(path.c_str());
}

TEST(MappedFile, MissingFileNamesThePath) {
  try {
    MappedFile file("/nonexistent/lumen/model.gguf");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/lumen/model.gguf"), std::string::npos);
  }
}

TEST(MappedFile, DirectoryIsRejected) {
  EXPECT_THROW(MappedFile(std::filesystem::temp_directory_path().string()), Error);
}

}  // namespace
}  // namespace lumen
