// Every vector set in ../shared/testdata/tokenizer/: the ids Hugging Face tokenizers produces,
// with add_special=false and parse_special=false. One ctest test per vocabulary (label golden).
#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <string>

#include "gguf/file.h"
#include "golden_vectors.h"
#include "tokenizer/tokenizer.h"

namespace lumen::tokenizer {
namespace {

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    out += ' ';
    out += std::to_string(id);
  }
  return out;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesReferenceIds) {
  LUMEN_REQUIRE_TESTDATA();
  std::string path = kTokDir + "ggml-vocab-" + GetParam() + ".gguf";
  auto cases = testing::read_golden_cases(path);
  ASSERT_EQ(cases.size(), 46u);
  Tokenizer tokenizer = Tokenizer::from_gguf(gguf::GgufFile::open(path));
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<int32_t> ids = tokenizer.encode(cases[i].text);
    EXPECT_EQ(ids, cases[i].ids) << "case " << i << " text '" << cases[i].text << "'\n  got:"
                                 << ids_text(ids) << "\n want:" << ids_text(cases[i].ids);
    if (ids == cases[i].ids) ++passed;
  }
  std::printf("%s: %zu/%zu cases exact\n", GetParam().c_str(), passed, cases.size());
}

INSTANTIATE_TEST_SUITE_P(Vocab, Golden,
                         ::testing::Values("gpt-2", "llama-bpe", "qwen2", "starcoder",
                                           "llama-spm", "phi-3"),
                         [](const auto& test_param) {
                           std::string name = test_param.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace lumen::tokenizer
