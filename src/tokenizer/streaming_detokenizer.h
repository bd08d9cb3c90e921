#pragma once
// Token ids to text, one id at a time, for streaming generated text to a user. What push()
// returns is always whole UTF-8: bytes of a character that later tokens may still complete are
// held back, and bytes that can never become valid UTF-8 come out as U+FFFD (one per maximal
// ill-formed subpart, as sanitize_utf8 does). The concatenation of everything push() and
// flush() return equals sanitize_utf8(tokenizer.decode(ids, options)).
//
// SentencePiece's leading space: with options.strip_leading_space and a vocabulary that adds a
// dummy prefix, one space is taken off the start of the whole output (see DecodeOptions). A
// stream fed a response's tokens thus starts "Hello", not " Hello", as Hugging Face's decode of
// those tokens does.
#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace lumen::tokenizer {

class StreamingDetokenizer {
 public:
  // `tokenizer` must outlive this object.
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {});

  // The text that token `id` completes (often empty while a character is half received).
  // Throws lumen::Error for an id outside the vocabulary, and then has consumed nothing.
  std::string push(int32_t id);

  // Everything still held back, with an unfinished sequence at the end as U+FFFD (call it when
  // the stream ends). More tokens may follow.
  std::string flush();

  // Bytes received but not yet returned.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  bool strip_pending_;  // the leading space is still to be dropped
  std::string pending_;
};

}  // namespace lumen::tokenizer
