// NFC normalization, which Qwen 2's tokenizer applies (its tokenizer.json has an NFC normalizer)
// and the others do not (nor does llama.cpp for any model):
//  - to_nfc on its own: hand-checked cases, agreement with utf8proc's own NFC on random text,
//    and linear time on a hostile run of combining marks;
//  - the tokenizer against Hugging Face tokenizers (qwen2_nfc_golden.py rebuilds Qwen 2's and
//    GPT-2's pipelines from the shared vocab GGUFs and wrote qwen2_nfc_golden.txt);
//  - decomposed text tokenizing as the precomposed text with Qwen 2's vocabulary, and as its
//    own bytes with every other pre-tokenizer.
#include "tokenizer/unicode_normalizer.h"

#include <gtest/gtest.h>
#include <utf8proc.h>

#include "lumen_testdata.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace lumen::tokenizer {
namespace {

namespace fs = std::filesystem;

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";

// --- to_nfc ------------------------------------------------------------------------------------

TEST(Nfc, ComposesDecomposedText) {
  EXPECT_EQ(to_nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(to_nfc("cafe\u0301"), "caf\u00e9");
  EXPECT_EQ(to_nfc("A\u030a \u212b"), "\u00c5 \u00c5");           // the Angstrom sign too
  EXPECT_EQ(to_nfc("a\u0301\u0316"), "\u00e1\u0316");             // reordered, then composed
  EXPECT_EQ(to_nfc("\u1100\u1161\u11a8"), "\uac01");              // conjoining jamo
  EXPECT_EQ(to_nfc("\u0958"), "\u0915\u093c");                    // a composition exclusion
  EXPECT_EQ(to_nfc("\u03b1\u0313\u0300\u0345"), "\u1f82");        // four code points, one
  EXPECT_EQ(to_nfc("\u0301x"), "\u0301x");                        // nothing to compose with
  EXPECT_EQ(to_nfc("e\u0301\u0301"), "\u00e9\u0301");             // one mark per base
  EXPECT_EQ(to_nfc("\xef\xbf\xbd\u0301"), "\xef\xbf\xbd\u0301");  // U+FFFD composes with nothing
}

TEST(Nfc, LeavesNfcTextAlone) {
  for (std::string_view text : {"", "plain ASCII", "caf\u00e9 d\u00e9j\u00e0", "\ud55c\uad6d\uc5b4 \u6771\u4eac",
                                "\u00e1\u0316", "Emoji \U0001f999 \U0001f469\U0001f3fd\u200d\U0001f4bb"}) {
    EXPECT_EQ(to_nfc(text), text);
  }
  EXPECT_TRUE(is_nfc_quick("caf\u00e9 \u02ff"));  // everything below U+0300
  EXPECT_FALSE(is_nfc_quick("e\u0301"));
  EXPECT_FALSE(is_nfc_quick("\u6771"));  // from U+0300 on, the quick check gives up
}

// The chunking and the reordering here must give what utf8proc's own NFC gives on the whole text.
TEST(Nfc, AgreesWithUtf8procOnRandomText) {
  const std::vector<char32_t> pool = {'a',    'e',    'o',    'A',    ' ',    0x00e9, 0x0300, 0x0301, 0x0302,
                                      0x0308, 0x030a, 0x0316, 0x0323, 0x0327, 0x0345, 0x05b0, 0x0313, 0x03b1,
                                      0x1100, 0x1161, 0x11a8, 0xac00, 0x0915, 0x093c, 0x0958, 0x212b, 0x2126,
                                      0xf900, 0x0344, 0x1e0a, 0x0f73, 0x3099, 0x304b, 0xfffd, 0x1f82, 0x0340};
  // Marks of several classes, for runs longer than the insertion sort takes (the counting sort).
  const std::vector<char32_t> marks = {0x0300, 0x0301, 0x0316, 0x0323, 0x0327, 0x0345, 0x05b0, 0x0313, 0x093c, 0x3099};
  std::mt19937 rng(11);
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const size_t length = rng() % 24;
    for (size_t i = 0; i < length; ++i) append_utf8(text, pool[rng() % pool.size()]);
    const size_t marks_run = round % 4 == 0 ? 33 + rng() % 60 : 0;
    for (size_t i = 0; i < marks_run; ++i) append_utf8(text, marks[rng() % marks.size()]);
    utf8proc_uint8_t* expected = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(text.c_str()));
    ASSERT_NE(expected, nullptr);
    EXPECT_EQ(to_nfc(text), reinterpret_cast<const char*>(expected)) << text;
    std::free(expected);
  }
}

// A run of marks in alternating classes is the worst case for sorting by swapping neighbours
// (utf8proc_decompose's way, quadratic); here it is linear.
TEST(Nfc, LongRunsOfMarksStayLinear) {
  std::string text = "e";
  for (int i = 0; i < (1 << 18); ++i) text += "\u0301\u0316";  // classes 230, 220
  const auto start = std::chrono::steady_clock::now();
  std::string nfc = to_nfc(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string expected = "\u00e9";  // the first U+0301 composes (U+0316 does not block it)
  for (int i = 0; i < (1 << 18); ++i) expected += "\u0316";
  for (int i = 1; i < (1 << 18); ++i) expected += "\u0301";
  EXPECT_EQ(nfc, expected);
  EXPECT_LT(seconds, 30.0);  // 0.03 s in release, 1 s under the sanitizers; the quadratic sort would take hours
}

// --- The tokenizer -------------------------------------------------------------------------------

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

const Tokenizer& tokenizer_for(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    slot = std::make_unique<Tokenizer>(
        Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-" + name + ".gguf")));
  }
  return *slot;
}

// Golden lines: "VOCAB HEX IDS..." (the ids Hugging Face gives for the bytes HEX, one plain text).
TEST(NfcTokenizer, MatchesHuggingFace) {
  LUMEN_REQUIRE_TESTDATA();
  std::ifstream in(fs::path(LUMEN_TOKENIZER_TEST_DIR) / "qwen2_nfc_golden.txt");
  ASSERT_TRUE(in) << "qwen2_nfc_golden.txt is missing";
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string vocab, hex;
    fields >> vocab >> hex;
    std::vector<int32_t> expected;
    for (int32_t id; fields >> id;) expected.push_back(id);
    const std::string text = unhex(hex);
    EXPECT_EQ(tokenizer_for(vocab).encode(text), expected) << vocab << " '" << text << "'";
    ++lines;
  }
  EXPECT_EQ(lines, 36u);
}

TEST(NfcTokenizer, Qwen2TokenizesDecomposedAsPrecomposed) {
  LUMEN_REQUIRE_TESTDATA();
  const Tokenizer& qwen2 = tokenizer_for("qwen2");
  EXPECT_EQ(qwen2.encode("e\u0301"), qwen2.encode("\u00e9"));
  EXPECT_EQ(qwen2.encode("cafe\u0301"), qwen2.encode("caf\u00e9"));
  EXPECT_EQ(qwen2.encode("Cafe\u0301 de\u0301ja\u0300 vu"), qwen2.encode("Caf\u00e9 d\u00e9j\u00e0 vu"));
  EXPECT_EQ(qwen2.decode(qwen2.encode("cafe\u0301")), "caf\u00e9");
  // Plain text runs on across pieces, so a mark in the next piece still composes...
  const TextPiece split_word[] = {{"cafe", false}, {"\u0301", false}};
  EXPECT_EQ(qwen2.encode_pieces(split_word, false), qwen2.encode("caf\u00e9"));
  // ... but not across a special token (Hugging Face normalizes between added tokens).
  const std::vector<int32_t> im_end = qwen2.encode("<|im_end|>", {.parse_special = true});
  ASSERT_EQ(im_end.size(), 1u);
  std::vector<int32_t> expected = qwen2.encode("e");
  expected.push_back(im_end[0]);
  for (int32_t id : qwen2.encode("\u0301")) expected.push_back(id);
  EXPECT_EQ(qwen2.encode("e<|im_end|>\u0301", {.parse_special = true}), expected);
  // Invalid UTF-8 is still read as U+FFFD (which composes with nothing), then normalized.
  EXPECT_EQ(qwen2.encode("e\u0301\xff"), qwen2.encode("\u00e9\ufffd"));
  EXPECT_EQ(qwen2.decode(qwen2.encode("e\u0301\xff\u0301")), "\u00e9\ufffd\u0301");
}

// llama.cpp normalizes for no model, and of the tokenizer.json files Lumen follows only
// Qwen 2's has an NFC normalizer: everything else tokenizes the bytes as they come.
TEST(NfcTokenizer, OtherPreTokenizersDoNotNormalize) {
  LUMEN_REQUIRE_TESTDATA();
  const std::pair<const char*, const char*> cases[] = {
      {"gpt-2", "gpt-2"},
      {"llama-bpe", "llama-bpe"},
      {"starcoder", "starcoder"},
      {"starcoder", "smollm"},  // SmolLM2's name for the same pre-tokenizer
      {"qwen2", "deepseek-r1-qwen"},
      {"llama-spm", "default"},
      {"phi-3", "default"}};
  for (const auto& [file, pre] : cases) {
    Vocab vocab = load_vocab(gguf::GgufFile::open(kTokDir + "ggml-vocab-" + file + ".gguf").metadata());
    vocab.pre_tokenizer = pre;
    const Tokenizer tok = Tokenizer::from_vocab(std::move(vocab));
    EXPECT_NE(tok.encode("cafe\u0301"), tok.encode("caf\u00e9")) << file << " as " << pre;
    EXPECT_EQ(tok.decode(tok.encode("cafe\u0301"), {.strip_leading_space = true}), "cafe\u0301")
        << file << " as " << pre;
  }
}

}  // namespace
}  // namespace lumen::tokenizer
