#pragma once
// The vocabulary a GGUF file carries (tokenizer.ggml.*), loaded and validated. Everything a
// tokenizer later indexes by (token types, scores, special ids) is checked here once: arrays
// of the declared element type and of the vocabulary's length, special ids inside the
// vocabulary, byte tokens well formed. The tokenizers themselves build on this.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/metadata.h"

namespace lumen::tokenizer {

// ggml's token attribute numbering, as stored in tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

// tokenizer.ggml.model: which algorithm the vocabulary is for.
enum class VocabKind { None, SentencePiece, BytePairGpt2, WordPiece, Unigram, Rwkv };

struct SpecialTokens {
  std::optional<int32_t> bos, eos, eot, unknown, separator, padding, mask;
  // tokenizer.ggml.add_bos_token / add_eos_token. Where the file does not say, add_bos follows
  // llama.cpp's defaults: on for SentencePiece and for Llama 3's pre-tokenizer (when there is
  // a BOS token to add), off otherwise.
  bool add_bos = false;
  bool add_eos = false;
  // tokenizer.ggml.add_sep_token: the separator after the text (BERT's [CLS] text [SEP], whose
  // [CLS] is the BOS). Where the file does not say: on for WordPiece, as llama.cpp has it.
  bool add_sep = false;
};

struct Vocab {
  VocabKind kind = VocabKind::None;
  std::string model_name;      // tokenizer.ggml.model as written
  std::string pre_tokenizer;   // tokenizer.ggml.pre (empty when absent)
  std::vector<std::string> tokens;
  std::vector<float> scores;           // empty when the file has none
  std::vector<TokenType> types;        // Normal for every token when the file has none
  std::vector<std::string> merges;     // "left right" pairs, in priority order (BPE)
  SpecialTokens special;
  // tokenizer.ggml.add_space_prefix: SentencePiece's dummy prefix (a space before the text, and
  // the matching leading space dropped when decoding). Defaults: on for SentencePiece, off else.
  bool add_space_prefix = false;
  // Tokens that end generation: the declared EOS/EOT and the end-of-turn tokens recognised by
  // their text (see control_token_detection.h). Sorted.
  std::vector<int32_t> end_of_generation;
  std::vector<std::string> warnings;   // things ignored rather than rejected, for inspect

  bool ends_generation(int32_t id) const;

  size_t size() const { return tokens.size(); }
};

std::string_view vocab_kind_name(VocabKind kind);

// True when the metadata names a tokenizer at all (tokenizer.ggml.model present).
bool has_vocab(const gguf::Metadata& metadata);

// Throws lumen::Error naming the key and the problem.
Vocab load_vocab(const gguf::Metadata& metadata);

}  // namespace lumen::tokenizer
