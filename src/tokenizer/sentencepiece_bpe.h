#pragma once
// SentencePiece BPE (Llama 2, Phi-3, Gemma): score-ordered merges over code points, byte
// fallback to <0xXX> tokens, U+2581 for spaces and an optional dummy-prefix space.
//
// encode() matches llama.cpp's llm_tokenizer_spm and SentencePiece's own BPE encoder on one
// plain segment (special and user-defined tokens are split out by the Tokenizer before):
//   - every ' ' becomes U+2581; when `starts_text` and vocab.add_space_prefix, one U+2581 is
//     put in front; an empty segment gives no tokens at all (no lone dummy prefix);
//   - the text is cut into code points (each byte of invalid UTF-8 stands alone), then the
//     adjacent pair whose concatenation is a piece with the highest score is merged, again and
//     again (ties: the leftmost pair);
//   - merges only ever form Normal, UserDefined, Unused or Undefined pieces, as in
//     SentencePiece. llama.cpp would also form Control, Unknown and Byte tokens, but no
//     shipped vocabulary (Llama 2, Phi-3, Gemma 3) has one that a merge can reach, and user
//     text must never turn into a control token by itself;
//   - a piece of type Unused that a merge formed is split back into the two pieces it was made
//     of (SentencePiece's resegmentation; llama.cpp has no Unused tokens in these vocabularies);
//   - a symbol left that is no piece becomes one <0xXX> token per byte, or, in a vocabulary
//     without byte tokens, one unknown token per run of such symbols (as SentencePiece
//     does; throws if the vocabulary has neither).
//
// token_bytes() gives the raw bytes of a piece, as llama.cpp's token_to_piece with
// special=true: Normal pieces with U+2581 turned into ' ', Byte tokens as their byte,
// UserDefined, Control and Unknown pieces verbatim. Whether Control/Unknown text shows up in
// decoded output is the Tokenizer's decision (llama.cpp drops it unless asked to render special
// tokens). Unused and Undefined tokens give "" (llama.cpp renders nothing for them either way).
#include <memory>

#include "tokenizer/tokenizer.h"

namespace lumen::tokenizer {

// Throws lumen::Error for a vocabulary it cannot encode with (e.g. ids out of range).
std::unique_ptr<TokenizerModel> make_sentencepiece_bpe(std::shared_ptr<const Vocab> vocab);

}  // namespace lumen::tokenizer
