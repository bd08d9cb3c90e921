#include "tokenizer/streaming_detokenizer.h"

#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include "gguf/file.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {
namespace {

const std::string kTokDir = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/";

Tokenizer open_vocab(const std::string& name) {
  return Tokenizer::from_gguf(gguf::GgufFile::open(kTokDir + "ggml-vocab-" + name + ".gguf"));
}

// Feeds ids one at a time; checks every chunk is valid UTF-8 and returns them all.
std::vector<std::string> stream(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                DecodeOptions options = {}) {
  StreamingDetokenizer detok(tok, options);
  std::vector<std::string> chunks;
  for (int32_t id : ids) chunks.push_back(detok.push(id));
  chunks.push_back(detok.flush());
  for (const std::string& chunk : chunks) EXPECT_TRUE(is_valid_utf8(chunk)) << chunk;
  return chunks;
}

std::string join(const std::vector<std::string>& chunks) {
  std::string out;
  for (const auto& c : chunks) out += c;
  return out;
}

TEST(StreamingDetokenizer, NeverEmitsHalfACharacter) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = open_vocab("gpt-2");
  std::string text = "llamas 🦙🦙 and 😶‍🌫️ in Khmer កាន់តែ";
  std::vector<int32_t> ids = tok.encode(text);
  auto chunks = stream(tok, ids);
  EXPECT_EQ(join(chunks), text);
  // GPT-2 has no token for the llama emoji: its four bytes come as separate tokens, so some
  // pushes must have held bytes back.
  size_t empty = 0;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) empty += chunks[i].empty() ? 1 : 0;
  EXPECT_GT(empty, 0u);
}

TEST(StreamingDetokenizer, BrokenSequencesBecomeReplacementCharacters) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = open_vocab("gpt-2");
  // Token ids of single bytes: encode one byte each (invalid alone, so take the raw byte
  // tokens via the 4-byte emoji's ids).
  std::vector<int32_t> emoji = tok.encode("🦙");
  ASSERT_GE(emoji.size(), 2u);
  std::vector<int32_t> truncated(emoji.begin(), emoji.end() - 1);
  truncated.push_back(tok.encode("x")[0]);
  std::string joined = join(stream(tok, truncated));
  EXPECT_EQ(joined, sanitize_utf8(tok.decode(truncated)));
  EXPECT_EQ(joined.substr(joined.size() - 4), "\xEF\xBF\xBDx");
  // Unfinished at the end: flushed as U+FFFD.
  std::vector<int32_t> unfinished(emoji.begin(), emoji.end() - 1);
  EXPECT_EQ(join(stream(tok, unfinished)), "\xEF\xBF\xBD");
}

TEST(StreamingDetokenizer, DropsSentencePiecesLeadingSpaceOnce) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = open_vocab("llama-spm");
  ASSERT_TRUE(tok.vocab().add_space_prefix);
  std::vector<int32_t> ids = tok.encode("Hello world");
  ASSERT_EQ(tok.token_bytes(ids[0]).front(), ' ');  // the dummy prefix
  DecodeOptions options{.skip_special = true, .strip_leading_space = true};
  EXPECT_EQ(join(stream(tok, ids, options)), "Hello world");
  EXPECT_EQ(tok.decode(ids, options), "Hello world");
  // After a BOS that is skipped the rule still applies (Hugging Face: skipped tokens are not
  // part of the output); kept, the BOS text comes first and no space is dropped.
  std::vector<int32_t> with_bos = tok.encode("Hello world", {.add_special = true});
  ASSERT_EQ(with_bos[0], 1);
  EXPECT_EQ(join(stream(tok, with_bos, options)), "Hello world");
  EXPECT_EQ(join(stream(tok, with_bos, {.strip_leading_space = true})), "<s> Hello world");
  // Byte-level vocabularies add no prefix, so nothing is dropped.
  Tokenizer gpt2 = open_vocab("gpt-2");
  EXPECT_EQ(join(stream(gpt2, gpt2.encode(" Hi"), options)), " Hi");
}

TEST(StreamingDetokenizer, MatchesDecodeOnEveryGoldenCase) {
  LUMEN_REQUIRE_TESTDATA();
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "starcoder", "llama-spm", "phi-3"}) {
    Tokenizer tok = open_vocab(name);
    for (std::string text : {"ied 4 ½ months", "🚀 (normal) 😶‍🌫️ ✅", "\n \n\n \t", "Cửa Việt"}) {
      std::vector<int32_t> ids = tok.encode(text);
      DecodeOptions options{.strip_leading_space = true};
      EXPECT_EQ(join(stream(tok, ids, options)), sanitize_utf8(tok.decode(ids, options)))
          << name << ": " << text;
    }
  }
}

TEST(StreamingDetokenizer, BadIdThrowsAndConsumesNothing) {
  LUMEN_REQUIRE_TESTDATA();
  Tokenizer tok = open_vocab("gpt-2");
  StreamingDetokenizer detok(tok);
  EXPECT_THROW(detok.push(-5), Error);
  EXPECT_THROW(detok.push(1 << 30), Error);
  EXPECT_EQ(detok.pending_bytes(), 0u);
  EXPECT_EQ(detok.push(tok.encode("x")[0]), "x");
}

}  // namespace
}  // namespace lumen::tokenizer
