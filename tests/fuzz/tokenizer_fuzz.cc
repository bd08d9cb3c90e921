// Arbitrary bytes through encode (both special-token modes) and arbitrary ids through decode and
// the streaming detokenizer, for byte-level BPE vocabularies (Llama 3's, and Qwen 2's, which
// normalizes to NFC first) and a SentencePiece one. Tokenizers face user text directly: anything
// but a clean result is a finding. The NFC normalizer is also checked against utf8proc's own.
#include <utf8proc.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_normalizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace {

const lumen::tokenizer::Tokenizer& tokenizer_for(uint8_t selector) {
  static const auto bpe = lumen::tokenizer::Tokenizer::from_gguf(
      lumen::gguf::GgufFile::open(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-llama-bpe.gguf"));
  static const auto spm = lumen::tokenizer::Tokenizer::from_gguf(
      lumen::gguf::GgufFile::open(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-llama-spm.gguf"));
  static const auto qwen2 = lumen::tokenizer::Tokenizer::from_gguf(
      lumen::gguf::GgufFile::open(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-qwen2.gguf"));
  if ((selector & 1) != 0) return spm;
  return (selector & 4) != 0 ? qwen2 : bpe;
}

// to_nfc (chunked, with its own canonical ordering) must give what utf8proc's NFC gives.
void check_nfc(std::string_view bytes) {
  const std::string text = lumen::tokenizer::sanitize_utf8(bytes);
  utf8proc_uint8_t* expected = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &expected, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (length < 0) std::abort();  // valid UTF-8 is always accepted
  const bool same = lumen::tokenizer::to_nfc(text) ==
                    std::string_view(reinterpret_cast<const char*>(expected), static_cast<size_t>(length));
  std::free(expected);
  if (!same) std::abort();
}

}  // namespace

// The vocabularies load before the first input, so their loading (seconds under the sanitizers,
// for Qwen 2's 151k tokens) does not count against the per-input timeout.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  for (uint8_t selector : {0, 1, 4}) (void)tokenizer_for(selector);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& tokenizer = tokenizer_for(data[0]);
  const bool parse_special = (data[0] & 2) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  check_nfc(text);
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
