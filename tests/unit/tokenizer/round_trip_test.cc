// Round trips through the real vocabularies.
//
// What exactly holds for a token id t, with text = decode([t]):
//  - text is bytes; when they are valid UTF-8, encode(text) decodes back to exactly text
//    (byte-level BPE loses nothing, and special-token parsing is off).
//  - encode(text) need not be [t]: the pre-tokenizer may cut text apart (" 's" is a GPT-2
//    token, yet the regex splits it) and merges may reach other tokens first. This is Hugging
//    Face's behaviour too. But when encode(text) is one token, that token spells text, and in
//    these vocabularies no two normal tokens spell the same bytes, so it is t.
//  - a control token's text encodes back to it when special tokens are parsed.
// Token bytes that are not valid UTF-8 (pieces of a multi-byte character) cannot survive as
// text: encode reads them as U+FFFD.
#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <array>
#include <filesystem>
#include <unordered_set>
#include <string>

#include "gguf/file.h"
#include "tokenizer/byte_to_unicode.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_normalizer.h"
#include "tokenizer/utf8.h"

namespace lumen::tokenizer {
namespace {

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";

std::string smollm2_path() {
  const char* cache = std::getenv("LUMEN_CACHE");
  std::string dir = cache != nullptr ? cache
                                     : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") +
                                           "/.cache/lumen/models";
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

void check_every_token(const Tokenizer& tok) {
  size_t text_round_trips = 0, single_token = 0, invalid_utf8 = 0;
  for (size_t i = 0; i < tok.vocab().size(); ++i) {
    auto id = static_cast<int32_t>(i);
    std::string text = tok.decode({id});
    TokenType type = tok.vocab().types[i];
    if (type == TokenType::Control || type == TokenType::Unknown) {
      ASSERT_EQ(tok.encode(text, {.parse_special = true}), std::vector<int32_t>{id}) << id;
      continue;
    }
    if (!is_valid_utf8(text)) {
      ++invalid_utf8;
      continue;
    }
    std::vector<int32_t> ids = tok.encode(text);
    ASSERT_EQ(tok.decode(ids), text) << "token " << id;
    ++text_round_trips;
    if (ids.size() == 1) {
      ASSERT_EQ(ids[0], id) << "token " << id << " '" << text << "'";
      ++single_token;
    }
  }
  std::printf("%zu tokens: %zu text round trips (%zu back to the same single token), %zu partial "
              "UTF-8\n", tok.vocab().size(), text_round_trips, single_token, invalid_utf8);
  // Most tokens are whole words that come back as themselves.
  EXPECT_GT(single_token, tok.vocab().size() * 8 / 10);
}

TEST(RoundTrip, EveryGpt2Token) {
  LUMEN_REQUIRE_TESTDATA();
  check_every_token(Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-gpt-2.gguf")));
}

TEST(RoundTrip, EveryLlama3Token) {
  LUMEN_REQUIRE_TESTDATA();
  check_every_token(
      Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-llama-bpe.gguf")));
}

TEST(RoundTrip, EverySmolLm2Token) {
  std::string path = smollm2_path();
  // A missing model is a failure, not a skip: CI downloads it (scripts/fetch_models.py).
  ASSERT_TRUE(std::filesystem::exists(path)) << "no " << path << " (scripts/fetch_models.py)";
  check_every_token(Tokenizer::from_gguf(gguf::GgufFile::open(path)));
}

// Every Unicode scalar value, in runs of 512 separated by a space and a digit or a newline,
// goes through encode and decode byte for byte. StarCoder's vocabulary has no token for some
// bytes (0xF1 among them, so U+40000..U+7FFFF): those bytes are dropped, as Hugging Face's
// BPE drops a symbol it has no token for when there is no unknown token (the byte-mapped text
// has one symbol per byte), and every other byte still comes back. Qwen 2's tokenizer normalizes
// to NFC first, so its text comes back in NFC (as Hugging Face's does).
TEST(RoundTrip, UnicodeSweepSurvives) {
  LUMEN_REQUIRE_TESTDATA();
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "starcoder"}) {
    Tokenizer tok =
        Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-" + name + ".gguf"));
    std::unordered_set<std::string> tokens(tok.vocab().tokens.begin(), tok.vocab().tokens.end());
    std::array<bool, 256> has_byte{};
    for (unsigned b = 0; b < 256; ++b) {
      has_byte[b] = tokens.count(ByteUnicodeMap::get().encode(static_cast<uint8_t>(b))) > 0;
    }
    const bool nfc = std::string_view(name) == "qwen2";
    std::string text, expected;
    size_t mismatched_chunks = 0, dropped = 0;
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      // Planes 3 to 13 hold no assigned character: each is four UTF-8 bytes of the same kind.
      // Under the sanitizers the first 1024 of each plane stand for the rest (Release sweeps all).
      if (LUMEN_UNDER_SANITIZERS && cp >= 0x30000 && cp <= 0xDFFFF && (cp & 0xFFFF) >= 0x400) {
        cp |= 0xFFFF;
        continue;
      }
      std::string utf8 = to_utf8(cp);
      text += utf8;
      for (char c : utf8) {
        if (has_byte[static_cast<uint8_t>(c)]) expected += c;
        else ++dropped;
      }
      if (cp % 512 == 511 || cp == 0x10FFFF) {
        std::string separator = cp % 1024 == 1023 ? "\n" : " 7";
        text += separator;
        expected += separator;
        if (tok.decode(tok.encode(text)) != (nfc ? to_nfc(expected) : expected)) ++mismatched_chunks;
        text.clear();
        expected.clear();
      }
    }
    EXPECT_EQ(mismatched_chunks, 0u) << name;
    std::printf("%s: %zu bytes without a token dropped\n", name, dropped);
  }
}

}  // namespace
}  // namespace lumen::tokenizer
