// Every file in ../shared/testdata/gguf-bad must do what its manifest entry says, and every
// truncation of a valid file must be rejected. Run under ASan + UBSan (the debug preset), an
// out-of-bounds read or a wild allocation fails these tests even when the verdict is right.
#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace lumen::gguf {
namespace {

const std::string kDir = std::string(LUMEN_TESTDATA_DIR) + "/gguf-bad/";

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What loading a model does with a file: parse it, and read its vocabulary if it has one.
// Returns the error message, or "" when the file was accepted.
std::string load_verdict(std::span<const uint8_t> bytes) {
  try {
    GgufFile file = GgufFile::parse(bytes, "test");
    if (tokenizer::has_vocab(file.metadata())) tokenizer::load_vocab(file.metadata());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct ManifestEntry {
  std::string file;
  std::string expect;
  std::string why;
};

std::vector<ManifestEntry> manifest() {
  std::ifstream in(kDir + "manifest.json");
  auto json = nlohmann::json::parse(in);
  std::vector<ManifestEntry> entries;
  for (const auto& e : json) {
    if (e["file"].get<std::string>().find('[') != std::string::npos) continue;  // truncations
    entries.push_back({e["file"], e["expect"], e["why"]});
  }
  return entries;
}

TEST(HostileFiles, ManifestIsPresent) {
  LUMEN_REQUIRE_TESTDATA(); EXPECT_GE(manifest().size(), 60u); }

TEST(HostileFiles, EachFileDoesWhatTheManifestSays) {
  LUMEN_REQUIRE_TESTDATA();
  for (const ManifestEntry& entry : manifest()) {
    SCOPED_TRACE(entry.file + ": " + entry.why);
    // An exact-size heap copy: ASan flags any read past its end.
    std::vector<uint8_t> bytes = read_all(kDir + entry.file);
    std::string error = load_verdict(bytes);
    if (entry.expect == "accept") {
      EXPECT_EQ(error, "");
    } else if (entry.expect == "reject") {
      EXPECT_NE(error, "");
    }
    EXPECT_EQ(error.find('\n'), std::string::npos) << "errors are one line: " << error;
  }
}

TEST(HostileFiles, EveryTruncationOfAValidFileIsRejected) {
  LUMEN_REQUIRE_TESTDATA();
  std::vector<uint8_t> whole = read_all(kDir + "ok_minimal.gguf");
  ASSERT_GT(whole.size(), 1000u);
  EXPECT_EQ(load_verdict(whole), "");
  for (size_t n = 0; n < whole.size(); ++n) {
    std::vector<uint8_t> prefix(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(load_verdict(prefix), "") << "accepted a truncation to " << n << " bytes";
  }
}

TEST(HostileFiles, ErrorsSayWhatWasWrong) {
  LUMEN_REQUIRE_TESTDATA();
  auto verdict = [](const char* name) { return load_verdict(read_all(kDir + name)); };
  EXPECT_NE(verdict("bad_magic.gguf").find("magic"), std::string::npos);
  EXPECT_NE(verdict("bad_version_bigendian.gguf").find("big-endian"), std::string::npos);
  EXPECT_NE(verdict("bad_align_type.gguf").find("general.alignment"), std::string::npos);
  EXPECT_NE(verdict("bad_tensor_dup_name.gguf").find("duplicate tensor"), std::string::npos);
  EXPECT_NE(verdict("bad_offset_overlap.gguf").find("overlap"), std::string::npos);
  EXPECT_NE(verdict("tok_type_u8_array.gguf").find("tokenizer.ggml.token_type"), std::string::npos);
  EXPECT_NE(verdict("deeply_nested_array.gguf").find("k.nest"), std::string::npos);
}

TEST(HostileFiles, CustomAlignmentIsHonoured) {
  LUMEN_REQUIRE_TESTDATA();
  auto bytes = read_all(kDir + "ok_custom_align_64.gguf");
  GgufFile file = GgufFile::parse(bytes);
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.data_offset() % 64, 0u);
}

}  // namespace
}  // namespace lumen::gguf
