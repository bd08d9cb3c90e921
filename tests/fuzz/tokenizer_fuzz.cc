// Arbitrary bytes through encode (both special-token modes) and arbitrary ids through decode and
// the streaming detokenizer, for a byte-level BPE and a SentencePiece vocabulary. Tokenizers
// face user text directly: anything but a clean result is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

const lumen::tokenizer::Tokenizer& tokenizer_for(uint8_t selector) {
  static const auto bpe = lumen::tokenizer::Tokenizer::from_gguf(
      lumen::gguf::GgufFile::open(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-llama-bpe.gguf"));
  static const auto spm = lumen::tokenizer::Tokenizer::from_gguf(
      lumen::gguf::GgufFile::open(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-llama-spm.gguf"));
  return (selector & 1) != 0 ? spm : bpe;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& tokenizer = tokenizer_for(data[0]);
  const bool parse_special = (data[0] & 2) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    auto ids = tokenizer.encode(text, {.add_special = true, .parse_special = parse_special});
    (void)tokenizer.decode(ids);

    // The same bytes read as token ids, wrapped into the vocabulary.
    std::vector<int32_t> raw_ids;
    for (size_t i = 1; i + 4 <= size; i += 4) {
      uint32_t raw;
      std::memcpy(&raw, data + i, 4);
      raw_ids.push_back(static_cast<int32_t>(raw % tokenizer.vocab().size()));
    }
    lumen::tokenizer::StreamingDetokenizer stream(tokenizer);
    std::string streamed;
    for (int32_t id : raw_ids) streamed += stream.push(id);
    streamed += stream.flush();
  } catch (const lumen::Error&) {
  }
  return 0;
}
